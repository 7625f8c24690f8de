mod result_images;
mod terminal_env;
mod terminal_sandbox;
