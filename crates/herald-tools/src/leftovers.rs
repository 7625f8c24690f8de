//! Files and directories herald names after its process id
//! (`<prefix><pid>-<random>`), so the ones a killed process left behind can
//! be told from those of live processes and removed by the next start.

use std::path::Path;

/// Removes the entries of `dir` named `<prefix><pid>-…` whose process no
/// longer runs (files, or directories with their contents). Returns how many
/// were removed. Blocking; unreadable directories remove nothing.
pub fn remove_dead_process_entries(dir: &Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path).is_ok(),
            Ok(_) => std::fs::remove_file(&path).is_ok(),
            Err(_) => false,
        };
        removed += usize::from(gone);
    }
    removed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_dead_processes_go_and_live_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        std::fs::write(tmp.path().join(format!("x-{dead}-a")), "f").unwrap();
        std::fs::create_dir(tmp.path().join(format!("x-{dead}-b"))).unwrap();
        std::fs::write(tmp.path().join(format!("x-{dead}-b/inner")), "f").unwrap();
        std::fs::write(tmp.path().join(format!("x-{me}-c")), "f").unwrap();
        std::fs::write(tmp.path().join("x-notapid-d"), "f").unwrap();
        std::fs::write(tmp.path().join(format!("y-{dead}-e")), "f").unwrap();
        assert_eq!(remove_dead_process_entries(tmp.path(), "x-"), 2);
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![
                format!("x-{me}-c"),
                "x-notapid-d".into(),
                format!("y-{dead}-e")
            ]
        );
    }
}
