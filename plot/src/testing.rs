//! What tests that draw figures share, in this crate and in the crates that draw with it: one
//! policy name of every scheme, and the folder a test draws into.

use std::path::PathBuf;

/// One policy of every scheme, as tests of figures name them.
pub const TEST_SCHEMES: [&str; 7] = [
    "checkpoints/mocc-omega36",
    "checkpoints/aurora",
    "cubic",
    "bbr",
    "copa",
    "vegas",
    "vivace",
];

/// Where a test draws its figures: `$MOCC_KEEP_TEST_FIGURES` when set (kept, to look at), else
/// a temporary folder the test removes. Returns the folder and whether to keep it.
pub fn test_figure_dir(name: &str) -> std::io::Result<(PathBuf, bool)> {
    match std::env::var_os("MOCC_KEEP_TEST_FIGURES") {
        Some(d) => {
            let d = PathBuf::from(d);
            std::fs::create_dir_all(&d)?;
            Ok((d, true))
        }
        None => {
            let d = std::env::temp_dir().join(format!("mocc-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&d)?;
            Ok((d, false))
        }
    }
}
