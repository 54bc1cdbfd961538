//! Build script shared by every package whose binaries link libtorch.
//!
//! torch-sys (`links = "tch"`) exports the folder holding libtorch as `DEP_TCH_LIBTORCH_LIB`;
//! embedding it as an rpath lets `mocc` and the test binaries start without LD_LIBRARY_PATH.
//! With the `cuda` feature the CUDA part of libtorch is linked even though no symbol of it is
//! referenced directly (it registers the CUDA backend from static initializers).
//!
//! For the `mocc` binary it also records the git revision it was built from as
//! `MOCC_GIT_REVISION` (`unknown` outside a git checkout), which runs and exports carry.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    }
    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch");
    }
    if std::env::var("CARGO_PKG_NAME").as_deref() == Ok("mocc") {
        emit_git_revision();
    }
}

fn emit_git_revision() {
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let git = root.join(".git");
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed={}", git.join(r).display());
        }
    }
    println!(
        "cargo:rerun-if-changed={}",
        git.join("packed-refs").display()
    );
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=MOCC_GIT_REVISION={rev}");
}
