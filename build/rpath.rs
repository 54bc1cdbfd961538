//! Build script shared by every package whose binaries link libtorch.
//!
//! torch-sys (`links = "tch"`) exports the folder holding libtorch as `DEP_TCH_LIBTORCH_LIB`;
//! embedding it as an rpath lets `mocc` and the test binaries start without LD_LIBRARY_PATH.
//! With the `cuda` feature the CUDA part of libtorch is linked even though no symbol of it is
//! referenced directly (it registers the CUDA backend from static initializers).

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    }
    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch");
    }
}
