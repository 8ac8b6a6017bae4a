"""The scenario's JSON Schema: shipped as generated, every bundled scenario valid against it, a misspelt key refused,
and every scenario file ``placement init`` writes or the package bundles points an editor at it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from placement.cli import main
from placement.scenario.schema import scenario_schema, schema_text
from placement.world.bundled import SCHEMA_COMMENT, SCHEMA_FILE, bundled_path, bundled_scenarios


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(bundled_path("schema", SCHEMA_FILE).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_shipped_schema_is_what_placement_schema_writes(capsys: pytest.CaptureFixture[str]) -> None:
    # regenerate with: placement schema --out data/schema/scenario.schema.json
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    assert printed == schema_text()
    assert bundled_path("schema", SCHEMA_FILE).read_text(encoding="utf-8") == printed, (
        "the shipped schema is stale: run placement schema --out data/schema/scenario.schema.json"
    )


def test_every_bundled_scenario_is_valid_and_points_at_the_schema(validator: jsonschema.protocols.Validator) -> None:
    scenarios = bundled_scenarios()
    assert len(scenarios) >= 5
    for path in scenarios:
        text = path.read_text(encoding="utf-8")
        assert text.splitlines()[0] == f"{SCHEMA_COMMENT}../schema/{SCHEMA_FILE}", path.name
        assert (path.parent / f"../schema/{SCHEMA_FILE}").resolve().is_file()
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(text))]
        assert errors == [], (path.name, errors)


@pytest.mark.parametrize(
    ("where", "key"),
    [((), "demnd"), (("demand",), "adoptoin"), (("classes", 0), "ttft_p99"), (("serving",), "acelerator")],
)
def test_a_misspelt_key_is_refused(validator: jsonschema.protocols.Validator, where: tuple[object, ...], key: str) -> None:
    raw = yaml.safe_load(bundled_path("scenarios", "europe-small.yaml").read_text(encoding="utf-8"))
    node = raw
    for step in where:
        node = node[step]
    node[key] = 1
    errors = list(validator.iter_errors(raw))
    assert errors, f"{key} was accepted"
    assert any(key in e.message for e in errors), [e.message for e in errors]


def test_a_wrong_type_and_an_out_of_range_value_are_refused(validator: jsonschema.protocols.Validator) -> None:
    raw = yaml.safe_load(bundled_path("scenarios", "europe-small.yaml").read_text(encoding="utf-8"))
    raw["demand"]["adoption"] = 1.5  # a share: at most 1
    raw["solver"] = {"name": "gurobi"}  # not one of highs, cbc
    messages = " ".join(e.message for e in validator.iter_errors(raw))
    assert "1.5" in messages and "gurobi" in messages


def test_schema_names_every_top_level_section() -> None:
    schema = scenario_schema()
    assert schema["additionalProperties"] is False
    assert {"sites", "demand", "classes", "serving", "economics"} <= set(schema["required"])
    assert {"latency", "solver", "objective", "time", "residency", "horizon"} <= set(schema["properties"])


def test_schema_out_writes_the_file_or_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.json"
    assert main(["schema", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == schema_text()
    assert main(["schema", "--out", str(tmp_path / "missing" / "s.json")]) == 1
    err = capsys.readouterr().err
    assert "cannot write the schema there" in err and "internal failure" not in err
    assert not (tmp_path / "missing").exists()


def test_init_copies_the_schema_beside_the_scenario(tmp_path: Path, validator: jsonschema.protocols.Validator) -> None:
    dest = tmp_path / "plan"
    assert main(["init", str(dest), "--scenario", "europe-small"]) == 0
    text = (dest / "scenario.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"{SCHEMA_COMMENT}{SCHEMA_FILE}"
    assert text.count("yaml-language-server") == 1
    assert (dest / SCHEMA_FILE).read_text(encoding="utf-8") == schema_text()
    assert list(validator.iter_errors(yaml.safe_load(text))) == []
