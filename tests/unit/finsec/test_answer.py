"""What /verify grades (answer.py, contract §D.2): the question is the last user message with string content; the
answer is `final_result` of the last submit_final_result call, and a malformed call counts as empty."""

from __future__ import annotations

import json
from typing import Any

import pytest

from finsec.grading.answer import HARD_GATE_TEXT, SUBMIT_TOOL, question_of, submitted_answer


def call(arguments: Any, name: str = SUBMIT_TOOL) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": arguments}


def submitted(*items: dict[str, Any]) -> str:
    return submitted_answer({"output": list(items)})


def test_question_of_is_the_last_user_message_with_string_content() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": "second"},
        {"role": "user", "content": [{"type": "input_text", "text": "parts"}]},
        "not a message",
    ]
    assert question_of(messages) == "second"


@pytest.mark.parametrize("responses_input", ["What was revenue?", None, [], [{"role": "assistant", "content": "x"}]])
def test_question_of_without_a_user_message_is_empty(responses_input: Any) -> None:
    assert question_of(responses_input) == ""


def test_the_last_submit_call_is_the_answer() -> None:
    assert SUBMIT_TOOL == "submit_final_result"
    first, second = call('{"final_result": "a"}'), call('{"final_result": "b"}')
    assert submitted(first, second) == "b"
    assert submitted(first, call('{"final_result": "z"}', name="other_tool")) == "a"  # other tools are not answers
    assert submitted(first, {"type": "message", "content": "prose"}) == "a"


def test_a_malformed_last_call_is_empty_even_after_a_good_one() -> None:
    assert submitted(call('{"final_result": "a"}'), call("{bad")) == ""


@pytest.mark.parametrize(
    "arguments",
    ["{bad", "[1]", None, {"final_result": "a"}, '{"final_result": ' + "[" * 5_000 + "]" * 5_000 + "}"],
)
def test_malformed_arguments_are_empty(arguments: Any) -> None:
    assert submitted(call(arguments)) == ""


def test_a_non_string_final_result_is_its_json() -> None:
    assert submitted(call('{"final_result": 42}')) == "42"
    assert json.loads(submitted(call('{"final_result": {"value": 4.5}}'))) == {"value": 4.5}


def test_no_output_list_is_empty() -> None:
    assert submitted_answer({}) == "" and submitted_answer({"output": "text"}) == ""
    assert submitted() == ""


def test_an_unpaired_surrogate_becomes_the_replacement_character() -> None:
    answer = submitted(call('{"final_result": "\\ud83d revenue"}'))
    assert answer == "\ufffd revenue"
    answer.encode("utf-8")


def test_the_hard_gate_text_names_the_tool() -> None:
    assert SUBMIT_TOOL in HARD_GATE_TEXT
