"""``memsdk --help`` suggests the pack that fits: every pack on offer, with its own description."""

from __future__ import annotations

from click.testing import CliRunner

from plugin_sdk.cli import cli
from plugin_sdk.packs.sources import available_packs


def test_root_help_lists_every_pack_on_offer_with_what_it_is_for() -> None:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    offered = [found for found in available_packs() if found.pack is not None]
    assert offered, "the built-in packs are on offer"
    for found in offered:
        assert found.pack is not None
        line = next(
            line for line in result.output.splitlines() if line.strip().startswith(found.name)
        )
        assert found.pack.description.split(":")[0] in line
    assert "memsdk claude-code install --project-dir . --pack NAME" in result.output


def test_a_command_s_help_does_not_repeat_the_packs() -> None:
    result = CliRunner().invoke(cli, ["inject", "--help"])
    assert result.exit_code == 0
    assert "Packs on offer" not in result.output
