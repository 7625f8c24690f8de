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

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && libc_loads_packed_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
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
