//! `herald config path|show`, and loading the config file with its checks
//! for every command that reads it.

use std::path::Path;

use herald_core::Config;
use herald_core::config::EffectiveConfig;

use crate::args::CommonArgs;
use crate::{CliError, Exit, setup};

/// Loads and checks the config file at `path`: a number out of range (or a
/// file that does not parse) is a usage error (exit 2); unknown keys and
/// unimplemented sections are printed as warnings on stderr.
pub(crate) fn load(path: &Path) -> Result<Config, CliError> {
    let config = Config::load(path).map_err(CliError::usage)?;
    for warning in &config.warnings {
        eprintln!("herald: warning: {}: {warning}", path.display());
    }
    Ok(config)
}

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

/// Prints every section's effective values with keys redacted, as TOML or
/// (`--json`) one JSON object. Works without credentials: what is missing
/// shows in `credentials`.
pub(crate) fn show(common: &CommonArgs, json: bool) -> Result<Exit, CliError> {
    let env = setup::environment();
    let (home, path) = setup::config_location(common, &env);
    let config = load(&path)?;
    let settings = herald_core::Settings::resolve_without_credentials(
        &config,
        &path,
        home,
        &env,
        &setup::overrides(common),
    )
    .map_err(CliError::usage)?;
    let key_var_set = env
        .get(settings.provider.key_var())
        .is_some_and(|v| !v.trim().is_empty());
    let view = EffectiveConfig::new(&settings, key_var_set, &config.warnings);
    let text = if json {
        serde_json::to_string_pretty(&view).map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot encode the settings as JSON: {err}"))
        })?
    } else {
        view.to_toml().map_err(|err| {
            CliError::failed(anyhow::anyhow!("cannot encode the settings as TOML: {err}"))
        })?
    };
    println!("{}", text.trim_end());
    Ok(Exit::Completed)
}
