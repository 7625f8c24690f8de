mod environment;
mod everything_http;
mod everything_stdio;
mod faults;
mod filesystem_stdio;
mod hub;
mod resources_elicitation;
mod tool_images;
