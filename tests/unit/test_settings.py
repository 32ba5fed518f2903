"""The settings table is the one declaration of every option: the command line's options,
Settings and the README's table of options agree with it."""

from __future__ import annotations

import dataclasses
import re

import click
import pytest

from agent_memory import settings as table
from agent_memory.cli.main import cli
from agent_memory.settings import GLOBAL, SETTINGS, Settings
from tests.support.paths import ROOT

README = ROOT / "README.md"


def click_options(command: str | None) -> dict[str, click.Option]:
    params = cli.params if command is GLOBAL else cli.commands[command].params
    return {p.name: p for p in params if isinstance(p, click.Option) and p.expose_value}


def test_settings_has_a_field_for_every_global_option_and_no_other():
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert fields == {o.name for o in table.options_of(GLOBAL)}


@pytest.mark.parametrize("option", SETTINGS, ids=lambda o: o.flag)
def test_each_row_is_one_click_option_as_the_table_says(option):
    found = click_options(option.command)[option.name]
    assert found.opts == [option.flag]
    assert found.envvar == option.env
    assert found.help == option.help
    assert found.default == option.default
    assert found.multiple == option.multiple


@pytest.mark.parametrize("command", [GLOBAL, "serve-rest"])
def test_no_click_option_is_declared_outside_the_table(command):
    declared = {o.name for o in table.options_of(command)}
    assert set(click_options(command)) - {"version"} == declared


def test_the_readme_table_names_every_global_option_as_the_table_says():
    rows = [line for line in README.read_text().splitlines() if line.startswith("| `--")]
    by_flag = {re.match(r"\| `(--[a-z-]+)", row).group(1): row.split(" | ") for row in rows}
    for option in table.options_of(GLOBAL):
        cells = by_flag[option.flag]
        assert cells[1] == f"`{option.env}`", option.flag
        if option.default is not None:
            assert cells[2] == f"`{option.default}`", option.flag
    assert set(by_flag) == {o.flag for o in table.options_of(GLOBAL)}


def test_settings_read_choices_in_any_case():
    settings = Settings.of({"db": None, "embedder": "LOCAL", "redact": "Off", "log_level": "DEBUG"})
    assert (settings.embedder, settings.redact, settings.log_level) == ("local", False, "debug")
