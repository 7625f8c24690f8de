mod elicitations;
mod mcp_shared;
mod native;
mod openai;
mod python_client;
mod rejections;
