"""The LLM policy's tool schemas come from the server's request models, so they list what the routes accept."""

from __future__ import annotations

from deployments.routes.tools import TOOL_NAMES
from finsec.contract import RetrieveInformationRequest, SecFilingSearchRequest
from finsec_client.tool_schemas import DEFAULT_TOOLS, TOOLS, tool_schemas


def test_every_server_tool_has_a_schema_from_its_request_model():
    assert set(TOOLS) == set(TOOL_NAMES)
    schemas = {s["function"]["name"]: s for s in tool_schemas(tuple(TOOL_NAMES))}
    for name, (model, _) in TOOLS.items():
        parameters = schemas[name]["function"]["parameters"]
        assert set(parameters["properties"]) == set(model.model_fields)
        assert set(parameters["required"]) == {n for n, f in model.model_fields.items() if f.is_required()}
        assert schemas[name]["type"] == "function" and schemas[name]["function"]["description"]


def test_the_default_tools_are_the_filing_tools():
    names = [s["function"]["name"] for s in tool_schemas()]
    assert names == list(DEFAULT_TOOLS) and "web_search" not in names
    search = tool_schemas(("sec_filing_search",))[0]["function"]["parameters"]
    assert search["required"] == ["ticker"] and set(search["properties"]) == set(SecFilingSearchRequest.model_fields)
    assert "prompt" in tool_schemas(("retrieve_information",))[0]["function"]["parameters"]["required"]
    assert RetrieveInformationRequest.model_fields["prompt"].is_required()
