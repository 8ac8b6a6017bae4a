"""The scenario's JSON Schema: what an editor checks a scenario file against as it is typed.

The schema is generated from the pydantic models of :mod:`placement.scenario.document`, so it cannot say
anything the loader does not. The package ships it as ``placement/data/schema/scenario.schema.json``;
``placement schema`` prints the same text, and a test keeps the shipped file equal to it.
"""

from __future__ import annotations

import json
from typing import Any

from placement.scenario.document import Scenario

SCHEMA_ID = "urn:placement:scenario"
"""The schema's ``$id``: a name, not an address anything is fetched from."""


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file.

    Returns
    -------
    dict
        The schema: every section's keys, types, bounds, defaults and descriptions; unknown keys are refused
        (``additionalProperties: false``), as the loader refuses them.
    """
    schema = Scenario.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "placement scenario",
        **{key: value for key, value in schema.items() if key != "title"},
    }


def schema_text() -> str:
    """:func:`scenario_schema` as the text ``placement schema`` writes (indented, keys sorted, one final newline)."""
    return json.dumps(scenario_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
