mod mcp_elicitation;
mod runtime;
mod tool_images;
