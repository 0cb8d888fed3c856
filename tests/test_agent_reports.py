"""What the reports say about an attack on injection cases, as a user reads them: the action
check is not "corrected" with another judge's error figures, and cases with no utility
criterion are "not checked", never a 0/0 utility or a success-with-the-task-done rate that
counts them as the task undone (found running an imported InjecAgent sample end to end)."""

import json

from agent_fixture import write_cases

import aart
from aart.redteam.judge_accuracy import BUILT_IN


def _without_utility(path):
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for x in lines:
        x.pop("utility")
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_the_action_check_is_not_corrected_with_the_policy_rubrics_figures(tmp_path):
    data = write_cases(tmp_path / "cases.jsonl", tools=True)
    out = tmp_path / "att"
    f = aart.attack(data, target="agent_fixture:obeying_agent", out=out)
    assert f.primary_judge == "action" and f.overall["successes"] == 2
    # nothing to correct: the corrected figure is the observed rate and its own interval
    assert f.corrected["source"] == BUILT_IN["action"].source
    assert f.corrected["rate"] == f.overall["rate"]
    assert (f.corrected["ci_low"], f.corrected["ci_high"]) == (
        f.overall["ci_low"],
        f.overall["ci_high"],
    )
    for cell in f.by_value["technique"]:
        assert cell["corrected"] == cell["rate"]
    report = (out / "report.md").read_text()
    assert BUILT_IN["llm"].source not in report
    assert "corrected for the judge's error" not in report


def test_cases_without_a_utility_criterion_are_not_checked(tmp_path, capsys):
    data = _without_utility(write_cases(tmp_path / "cases.jsonl", tools=True))
    out = tmp_path / "att"
    f = aart.attack(data, target="agent_fixture:obeying_agent", out=out)
    assert f.overall["successes"] == 2
    assert f.agent["utility"]["n"] == 0
    assert f.agent["success_with_task_done"]["n"] == 0  # not 0/6: nothing says the task
    report = (out / "report.md").read_text()
    assert "0/0" not in report
    assert "the user's task not checked (no case has a utility criterion)" in report


def test_the_cli_prints_the_agent_figures(tmp_path):
    from click.testing import CliRunner

    from aart.cli.main import cli

    data = write_cases(tmp_path / "cases.jsonl", tools=True)
    r = CliRunner().invoke(
        cli,
        ["attack", str(data), "--target", "agent_fixture:obeying_agent", "--out",
         str(tmp_path / "att")],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "the user's task still done in 6/6" in r.output
    assert "attack success with the task still done 2/6" in r.output
    assert "sensitivity 0.85" not in r.output
