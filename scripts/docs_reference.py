"""The reference pages of the docs, generated from the code: scenario keys, CLI options and output columns.

Three sources, so the pages cannot drift from what the program does: the pydantic models of the scenario
(:class:`placement.scenario.document.Scenario`: key, type, unit, default, description), the argparse parser of the
``placement`` command (:func:`placement.cli.build_parser`) and the writers' table of columns and JSON keys
(:data:`placement.outputs.columns.OUTPUT_FILES`).

It is a MkDocs hook (``mkdocs.yml``: ``hooks``), so every ``mkdocs build`` and ``mkdocs serve`` regenerates the pages
in memory; ``python scripts/docs_reference.py FOLDER`` writes them to FOLDER to read them without MkDocs.
``tests/docs/test_reference.py`` fails when a key, an option or a column has no description.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from placement.cli import build_parser
from placement.outputs.columns import COMMANDS, OUTPUT_FILES, Column
from placement.scenario.document import Scenario

PAGES = {
    "reference/scenario.md": "scenario_page",
    "reference/cli.md": "cli_page",
    "reference/outputs.md": "outputs_page",
}
"""The generated pages, below ``docs/``, and the function that writes each."""

# Units of a key by the end of its name, when its description gives none in brackets.
_SUFFIX_UNITS = (
    ("_usd_per_mwh", "USD/MWh"), ("_usd_per_node_h", "USD/(node h)"), ("_usd_per_h", "USD/h"), ("_usd_per_gb", "USD/GB"),
    ("_usd_per_t", "USD/tCO2e"), ("_usd_per_m3", "USD/m3"), ("_usd_per_million_tokens", "USD/M tok"),
    ("_usd_per_million", "USD/M tok"), ("_usd", "USD"), ("_gbit_s", "Gbit/s"), ("_tok_s_per_node", "tok/s"),
    ("_tok_s_per_user", "tok/s"), ("_t_per_year", "tCO2e/year"), ("_m3_per_year", "m3/year"), ("_km_per_ms", "km/ms"),
    ("_ms", "ms"), ("_km", "km"), ("_kw", "kW"), ("_years", "years"), ("_per_year", "1/year"), ("_hours", "h"),
    ("_time_limit_s", "s"), ("time_limit_s", "s"), ("_tokens", "tokens"), ("_tokens_max", "tokens"),
    ("_per_user_per_day", "tokens/day"),
)  # fmt: skip


@dataclass(frozen=True)
class Key:
    """One key of a scenario file, as the reference lists it."""

    path: str
    type: str
    unit: str
    default: str
    description: str
    required: bool


def _type_text(annotation: Any) -> str:
    """A type as a planner reads it: ``number``, ``list of text``, ``one of p50, p90``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args)
    if origin is list:
        return f"list of {_type_text(args[0])}"
    if origin is dict:
        return f"map of {_type_text(args[0])} to {_type_text(args[1])}"
    if origin is typing.Annotated:
        return _type_text(args[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    names = {bool: "true/false", int: "integer", float: "number", str: "text"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's type (``list[WorkloadClass]``, ``str | RegimeChoice``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def unit_of(name: str, description: str) -> str:
    """A key's unit: the last ``[unit]`` of its description, else by the end of its name ('' for none)."""
    brackets = [b for b in re.findall(r"\[([^\]]+)\]", description) if not re.match(r"[\d.\-\s,]", b)]
    if brackets:
        return brackets[-1]
    return next((unit for suffix, unit in _SUFFIX_UNITS if name.endswith(suffix)), "")


def _default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    else:
        value = info.default
    if value is None:
        return "null"
    if isinstance(value, BaseModel):
        return "(its keys' defaults)"
    if isinstance(value, bool):
        return str(value).lower()
    if value in ([], {}):
        return "[]" if value == [] else "{}"
    return str(value)


def _description(info: FieldInfo, models: list[type[BaseModel]]) -> str:
    text = info.description or ""
    if not text and models:  # a section: its model's docstring
        text = (models[0].__doc__ or "").strip().split("\n\n")[0]
    return " ".join(text.split())


def scenario_keys(model: type[BaseModel] = Scenario, prefix: str = "") -> Iterator[Key]:
    """Every key of a scenario file, depth first, sections before their keys."""
    for name, info in model.model_fields.items():
        models = _models(info.annotation)
        listed = typing.get_origin(info.annotation) is list or any(
            typing.get_origin(a) is list for a in typing.get_args(info.annotation)
        )
        path = f"{prefix}{name}"
        description = _description(info, models)
        yield Key(
            path, _type_text(info.annotation), unit_of(name, description), _default_text(info), description, info.is_required()
        )
        for sub in dict.fromkeys(models):
            yield from scenario_keys(sub, f"{path}[]." if listed else f"{path}.")


def _code(text: str) -> str:
    """Text for a table cell inside backticks: one line, its pipes escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def _cell(text: str) -> str:
    """Text for a table cell or a paragraph: also ``<`` and ``>`` escaped, or ``map_<region>.png`` would be a tag."""
    return _code(text).replace("<", "&lt;").replace(">", "&gt;")


def scenario_page() -> str:
    """The scenario reference: one table per top-level section."""
    lines = [
        "# Scenario keys",
        "",
        "Every key of a scenario file, generated from the scenario's pydantic models (the same models `placement "
        "validate` checks a file with). `[]` marks a list of items: `classes[].share` is the `share` of each class. "
        "An unknown key is an error. `placement schema` writes the same rules as a JSON Schema for your editor.",
        "",
    ]
    keys = list(scenario_keys())
    parents = {k.path.split(".")[0].removesuffix("[]") for k in keys if "." in k.path}
    scalars = [k for k in keys if "." not in k.path and k.path not in parents]
    groups = [("top level", "Keys at the top of the file.", scalars)]
    for top in (k for k in keys if k.path in parents):
        below = [k for k in keys if k.path == top.path or k.path.startswith((f"{top.path}.", f"{top.path}[]."))]
        groups.append((f"`{top.path}`", top.description, below))
    for title, text, group in groups:
        lines += [f"## {title}", "", _cell(text), "", "| key | type | unit | default | description |", "|---|---|---|---|---|"]
        for key in group:
            default = "**required**" if key.required else f"`{_code(key.default)}`" if key.default else '`""`'
            lines.append(f"| `{key.path}` | {_cell(key.type)} | {_cell(key.unit)} | {default} | {_cell(key.description)} |")
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class Option:
    """One argument of one subcommand."""

    command: str
    names: str
    default: str
    choices: str
    help: str


def commands() -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand of ``placement``: its one-line help and its parser, in the order ``placement -h`` lists them."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: (helps.get(name, ""), sub) for name, sub in action.choices.items()}


def options(command: str, parser: argparse.ArgumentParser) -> Iterator[Option]:
    """The arguments of one subcommand, ``-h`` left out."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            names = ", ".join(action.option_strings)
            if action.nargs != 0:
                names += f" {action.metavar or action.dest.upper()}"
        else:
            names = str(action.metavar or action.dest)
        default = "" if action.default in (None, False, [], argparse.SUPPRESS) or action.required else str(action.default)
        if action.dest == "scenario" and default:
            default = "the bundled world (default)"
        choices = ", ".join(str(c) for c in action.choices) if action.choices else ""
        yield Option(command, names, default, choices, " ".join((action.help or "").split()))


def cli_page() -> str:
    """The command-line reference: one section per subcommand."""
    lines = [
        "# Command line",
        "",
        "Every command of `placement` and every option, generated from the command's own parser (what "
        "`placement COMMAND -h` prints). In a checkout, `python cli.py` is the same command.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    listed = commands()
    lines += [f"| [`{name}`](#{name}) | {_cell(text)} |" for name, (text, _) in listed.items()]
    for name, (text, parser) in listed.items():
        usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
        lines += ["", f"## {name}", "", _cell(text) + ".", "", "```text", usage, "```", ""]
        rows = list(options(name, parser))
        if rows:
            lines += ["| argument | default | choices | description |", "|---|---|---|---|"]
            lines += [f"| `{_code(o.names)}` | {_cell(o.default)} | {_cell(o.choices)} | {_cell(o.help)} |" for o in rows]
    return "\n".join(lines) + "\n"


def outputs_page() -> str:
    """The output-file reference: each command's files, their columns (a JSON file's keys) and their units."""
    lines = [
        "# Output files",
        "",
        "The files the commands write, command by command: each table's columns and each JSON file's top-level keys (and "
        "those of the objects some of them hold), "
        "with their units, generated from the column table the tests hold the writers to "
        "(`placement/outputs/columns.py`). A figure that is not defined is an empty cell (`null` in JSON), never "
        "`NaN` or `inf`. A name with a `<...>` part stands for one column per value of it: `<class>` one per "
        "workload class, `<continent>` one per continent. The other files of a results folder (the GeoJSON layers, "
        "the maps and reports) are described in [Reading the outputs](../get-started/outputs.md).",
        "",
    ]
    for command, heading in COMMANDS.items():
        lines += [f"## {heading}", ""]
        for table in (f for f in OUTPUT_FILES if f.command == command):
            what = "key" if table.is_json else "column"
            lines += [f"### `{table.name}`", "", f"{table.description[0].upper()}{table.description[1:]}. "
                      f"Written: {table.when}.", "", f"| {what} | unit | description |", "|---|---|---|"]  # fmt: skip
            lines += _column_rows(table.columns)
            lines.append("")
            for key, columns in table.nested:
                lines += [f"#### `{table.name}`: `{key}`", "", f"The keys of the object `{key}` holds.", "",
                          "| key | unit | description |", "|---|---|---|", *_column_rows(columns), ""]  # fmt: skip
    return "\n".join(lines)


def _column_rows(columns: tuple[Column, ...]) -> list[str]:
    """A reference table's rows: name, unit, description (and whether only some plans write it)."""
    return [f"| `{c.name}` | {_cell(c.unit)} | {_cell(c.description)}{' *(optional)*' if c.optional else ''} |" for c in columns]


def page(path: str) -> str:
    """The text of one generated page (a key of :data:`PAGES`)."""
    return str(globals()[PAGES[path]]())


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages to the site (built in memory; nothing is written into ``docs/``)."""
    from mkdocs.structure.files import File

    for path in PAGES:
        files.append(File.generated(config, path, content=page(path)))
    return files


_REMOTE_MODULE_SCRIPT = re.compile(r'<script type="module">(?:(?!</script>).)*?https://(?:(?!</script>).)*?</script>', re.S)
"""A module script that imports code from the web: nbconvert's loader of mermaid.js from a CDN, on every notebook page."""


def on_post_page(output: str, page: Any, config: Any) -> str:
    """MkDocs hook: drop scripts that would fetch code from the web, so every page works offline and self-contained.

    The notebook pages carry nbconvert's mermaid loader, which imports mermaid.js from cdnjs when a notebook has a
    diagram (ours have none); no other page has such a script.
    """
    return _REMOTE_MODULE_SCRIPT.sub("", output)


def main(argv: list[str]) -> int:
    """Write the generated pages below the folder ``argv[0]``."""
    if len(argv) != 1:
        print("usage: python scripts/docs_reference.py FOLDER", file=sys.stderr)
        return 2
    for path in PAGES:
        target = Path(argv[0]) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page(path), encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
