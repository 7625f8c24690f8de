//! Link options for the `herald` binary.
//!
//! On Linux with a C library that can load them, the binary is linked with
//! packed relative relocations (`DT_RELR`): a position-independent
//! executable carries about 34,000 pointer fix-ups in `.rela.dyn` (800 KB)
//! that the dynamic loader reads page by page at every start; packed they
//! take a few kilobytes. Start-up time and resident memory shrink, and ASLR
//! stays. glibc loads them since 2.36, which marks that with the symbol
//! version `GLIBC_ABI_DT_RELR`; without it (or when the C library cannot be
//! found) the binary is linked as before.
//!
//! Release builds also lay out the functions a typical run executes next to
//! each other (`link/hot-symbols.txt`, made by `scripts/order-hot-symbols`).
//! The kernel maps code in 64 KB windows around each touched page, so code
//! spread over the whole 21 MB text costs most of it in resident memory and
//! page faults; packed together, a run touches a few megabytes. The list only
//! orders sections: a name it lacks (or no longer matches) changes nothing,
//! so a stale list costs memory, never correctness.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && libc_loads_packed_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    order_hot_symbols(&os, &env);
}

/// Passes the hot-function list to the linker in release builds on
/// x86-64 Linux, where rustc links with its own LLD (which reads the list)
/// unless told otherwise; a probe link checks that this linker takes the
/// option, so another linker only loses the layout.
/// `HERALD_NO_SYMBOL_ORDER=1` turns it off.
fn order_hot_symbols(os: &str, env: &str) {
    println!("cargo:rerun-if-changed=link");
    println!("cargo:rerun-if-env-changed=HERALD_NO_SYMBOL_ORDER");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let disabled = std::env::var_os("HERALD_NO_SYMBOL_ORDER").is_some_and(|v| v != "0");
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let list = PathBuf::from(dir).join("link").join("hot-symbols.txt");
    if !(os == "linux" && env == "gnu" && arch == "x86_64" && release && !disabled) {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ];
    let refused = if !list.is_file() {
        format!("{} is missing", list.display())
    } else if !linker_takes(&args) {
        "the linker does not take --symbol-ordering-file".to_owned()
    } else {
        for arg in args {
            println!("cargo:rustc-link-arg-bin=herald={arg}");
        }
        return;
    };
    println!(
        "cargo:warning=linking herald without its hot-function layout ({refused}); it uses more memory"
    );
}

/// Whether rustc, with this build's flags and linker, links an empty
/// program given the link `args`.
fn linker_takes(args: &[String]) -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("link_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut probe = Command::new(rustc);
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    probe.args(flags.split('\x1f').filter(|flag| !flag.is_empty()));
    if let Ok(target) = std::env::var("TARGET") {
        probe.args(["--target", &target]);
    }
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        probe.arg(format!("-Clinker={linker}"));
    }
    for arg in args {
        probe.arg(format!("-Clink-arg={arg}"));
    }
    probe
        .arg("-o")
        .arg(out.join("link_probe"))
        .arg(&source)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether the C library the linker would use names `GLIBC_ABI_DT_RELR`.
fn libc_loads_packed_relocations() -> bool {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let Ok(output) = Command::new(compiler)
        .arg("-print-file-name=libc.so.6")
        .output()
    else {
        return false;
    };
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if !output.status.success() || !path.is_absolute() {
        return false;
    }
    std::fs::read(&path).is_ok_and(|bytes| {
        bytes
            .windows(b"GLIBC_ABI_DT_RELR".len())
            .any(|w| w == b"GLIBC_ABI_DT_RELR")
    })
}
