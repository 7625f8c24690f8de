//! `herald serve --open`: hands the login URL to the desktop's browser.

/// Opens `url` with `$BROWSER`, else `xdg-open` (or `open` on macOS); a
/// failure is only logged, since the URL is printed anyway.
pub(crate) fn open(url: &str) {
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".to_owned()
            } else {
                "xdg-open".to_owned()
            }
        });
    match std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // Reap it in the background so it leaves no zombie.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
        Err(err) => eprintln!(
            "herald serve: cannot start the browser ({opener}): {err}; open the URL above yourself"
        ),
    }
}
