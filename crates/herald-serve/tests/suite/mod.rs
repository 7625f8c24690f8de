mod elicitations;
mod mcp_shared;
mod native;
mod openai;
mod openapi_fuzz;
mod python_client;
mod rejections;
