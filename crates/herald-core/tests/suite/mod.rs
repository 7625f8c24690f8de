mod approvals;
mod mcp_elicitation;
mod protocol;
mod runtime;
mod tool_images;
