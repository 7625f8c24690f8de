//! `herald config path|show`.

use crate::args::CommonArgs;
use crate::{CliError, Exit, setup};

/// Prints the config path, writing the commented template when it is missing.
pub(crate) fn path(common: &CommonArgs) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (_, path) = setup::config_location(common, &env);
    if !path.exists() {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                CliError::failed(anyhow::anyhow!("cannot create {}: {err}", parent.display()))
            })?;
        }
        std::fs::write(&path, herald_core::config::DEFAULT_CONFIG).map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot write {}: {err}", path.display()))
        })?;
    }
    println!("{}", path.display());
    Ok(Exit::Completed)
}

/// Prints the effective settings with the key redacted.
pub(crate) fn show(common: &CommonArgs) -> Result<Exit, CliError> {
    let s = setup::settings(common)?;
    let key = match &s.api_key {
        Some(key) if key.chars().count() > 8 => {
            format!("{}… (set)", key.chars().take(3).collect::<String>())
        }
        Some(_) => "(set)".to_owned(),
        None => "(not set)".to_owned(),
    };
    println!("config_path = {:?}", s.config_path.display().to_string());
    println!("home = {:?}", s.home.display().to_string());
    println!("provider = {:?}", s.provider.as_str());
    println!("model = {:?}", s.model);
    println!("base_url = {:?}", s.base_url);
    println!("api_key = {key:?}");
    println!("max_iterations = {}", s.max_iterations);
    println!("cwd = {:?}", s.cwd.display().to_string());
    println!("output_limit_chars = {}", s.output_limit_chars);
    println!(
        "network = {{ max_retries = {}, retry_base_delay_ms = {}, stream_idle_timeout = {} }}",
        s.network.max_retries, s.network.retry_base_delay_ms, s.network.stream_idle_timeout
    );
    Ok(Exit::Completed)
}
