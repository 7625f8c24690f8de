mod env_scrub;
mod execute_code;
mod sandbox;
