//! mocc-outputs: what mocc writes, whole or not at all. No libtorch.
//!
//! - [`staged_dir`]: output folders written in a hidden sibling and put in place by one
//!   rename ([`StagedDir`], replacing only an earlier output of the same command:
//!   [`Replaceable`]); single files written atomically ([`write_file_atomic`]); the free space
//!   of a file system ([`free_bytes`]).
//! - [`atomic_file`]: single files written whole ([`write_file_atomic`]).
//! - [`csv`]: CSV cells: quoted text ([`csv::cell`]), empty cells for undefined numbers
//!   ([`csv::number`]).
//! - [`output_mark`]: which command wrote a folder and with which arguments ([`OutputMark`],
//!   [`MARK_FILE`]): a command refuses another command's folder, `--resume` other arguments.
//! - [`export_folder`]: exports written as folders (`policy.json` + `policy.safetensors`, a
//!   pair's competitive half in `competitive/`), each validated by loading it back with
//!   mocc-policy, the runtime that only reads them.
//!
//! Every crate that writes outputs (figures, evaluations, runs, exports) writes through here;
//! the deployable runtime, mocc-policy, links none of it.

pub mod atomic_file;
pub mod csv;
pub mod export_folder;
pub mod output_mark;
pub mod staged_dir;

pub use atomic_file::write_file_atomic;
pub use export_folder::{save_policy, write_export, write_pair, EXPORT_FOLDER};
pub use output_mark::{OutputMark, MARK_FILE};
pub use staged_dir::{free_bytes, Replaceable, StagedDir, StagedFile};
