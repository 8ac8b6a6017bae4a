import numpy as np
import pytest

from placement.economics.cost import (
    EconomicsParams,
    capital_recovery_factor,
    cost_per_million_tokens_usd,
    node_cost_usd_per_h,
    tokens_per_s_per_mw,
)


def test_seed_example_to_the_cent() -> None:
    # One node at $30/h: 10,000 goodput tok/s -> $0.83/M; 4,000 tok/s -> $2.08/M (seed 001).
    assert round(float(cost_per_million_tokens_usd(30.0, 10_000)), 2) == 0.83
    assert round(float(cost_per_million_tokens_usd(30.0, 4_000)), 2) == 2.08
    assert float(cost_per_million_tokens_usd(30.0, 4_000)) / float(cost_per_million_tokens_usd(30.0, 10_000)) == pytest.approx(
        2.5
    )


def test_zero_goodput_costs_infinity() -> None:
    assert np.isinf(cost_per_million_tokens_usd(30.0, 0.0))


def test_capital_recovery_factor_known_values() -> None:
    assert capital_recovery_factor(0.0, 4) == pytest.approx(0.25)
    # 8 % over 15 years: 0.116830 (standard annuity table).
    assert capital_recovery_factor(0.08, 15) == pytest.approx(0.116830, abs=1e-6)


def test_node_cost_components_by_hand() -> None:
    params = EconomicsParams(
        node_capex_usd=87_600.0, node_life_years=10, facility_life_years=10, discount_rate=0.0, opex_usd_per_node_h=2.0
    )
    cost = node_cost_usd_per_h(
        params, node_kw=10.0, pue=[1.5, 1.2], price_usd_per_mwh=[100.0, 50.0], facility_capex_usd_per_mw=[8_760_000.0, 0.0]
    )
    # capex 87,600 / 10 y / 8,760 h = $1/h; facility 8.76 M$/MW x 0.01 MW / 10 y / 8,760 h = $1/h.
    np.testing.assert_allclose(cost.node_capex_usd_per_h, [1.0, 1.0])
    np.testing.assert_allclose(cost.facility_capex_usd_per_h, [1.0, 0.0])
    # power: 10 kW x PUE x price: 0.01 MW x 1.5 x 100 = 1.5; 0.01 x 1.2 x 50 = 0.6.
    np.testing.assert_allclose(cost.power_usd_per_h, [1.5, 0.6])
    np.testing.assert_allclose(cost.total_usd_per_h, [5.5, 3.6])


def test_tokens_per_s_per_mw() -> None:
    # A 10.2 kW node at PUE 1.25 delivering 10,000 tok/s: 10,000 / 0.01275 MW.
    assert float(tokens_per_s_per_mw(10_000, 10.2 * 1.25 / 1000)) == pytest.approx(784_313.7, rel=1e-6)
    assert float(tokens_per_s_per_mw(10_000, 0.0)) == 0.0
