//! Recipes: one YAML file that says how a deployable export is built (its stages: training
//! runs with overrides and inits, exports, pairs), the rule it runs under, and the suites and
//! targets that judge it. `mocc train RECIPE.yaml --out DIR` runs one; `mocc sweep RECIPE.yaml
//! --seeds 1-6` runs one per seed and reports the targets over seeds.
//!
//! - [`file`]: the schema, parsed strictly, and the checks on stage names, references and order;
//! - [`plan`]: a recipe resolved before anything trains (`--set`, derived seeds, every config
//!   and suite loaded, the identity a resume must match);
//! - [`run`]: running the stages into `DIR/<stage>/`, resuming after a kill, the final export
//!   in `DIR/export/` with its provenance, the validation and `DIR/report.json`;
//! - [`sweep`]: a recipe over seeds, with compared policies and the report over seeds.
//!
//! ```yaml
//! recipe: tiny-pair
//! seed: 1
//! stages:
//!   - {name: coop, train: ../tiny-shared.yaml}
//!   - {name: comp, train: ../tiny-shared.yaml, set: {ppo.learning_rate: 0.001}}
//!   - {name: coop-export, export: coop}
//!   - {name: comp-export, export: comp}
//!   - {name: pair, pair: {cooperative: coop-export, competitive: comp-export}}
//! export: pair
//! untrained:
//!   action.mode_switch: the switch joins two policies trained apart
//! validation:
//!   suites: [../eval/shared-rtt.yaml]
//! ```

pub mod file;
pub mod plan;
pub mod run;
pub mod sweep;

pub use file::{is_recipe_text, RecipeFile};
pub use plan::{stage_seed, RecipePlan};
pub use run::{run_recipe, RecipeHooks, RecipeReport, RunOptions, REPORT_JSON};

use std::path::PathBuf;

/// What can go wrong with a recipe, each naming the file, field, stage or flag.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// The recipe file is invalid; `field` is the dotted path.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The recipe file.
        path: PathBuf,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A `--set` that does not apply.
    #[error("--set {0}")]
    Set(String),
    /// A stage's config, training, export or pair failed.
    #[error("stage {stage}: {message}")]
    Stage {
        /// The stage.
        stage: String,
        /// What went wrong.
        message: String,
    },
    /// The output folder cannot take this run (exists without --resume, another recipe's, ...).
    #[error("{0}")]
    Out(String),
    /// A training stage was stopped by a signal; the run continues with `--resume`.
    #[error("stage {stage} was interrupted; continue with `mocc train --resume {}`", out.display())]
    Interrupted {
        /// The stage.
        stage: String,
        /// The recipe's output folder.
        out: PathBuf,
    },
    /// The final export's rule and the recipe's `untrained:` disagree.
    #[error("{path}: untrained: {message}")]
    Rule {
        /// The recipe file.
        path: PathBuf,
        /// What disagrees.
        message: String,
    },
    /// Validating the export failed.
    #[error("validation: {0}")]
    Validation(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
