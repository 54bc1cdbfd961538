//! The `scenario:` entry ([`ScenarioRef`]): a scenario file's path or an inline scenario.

use mocc_gym::ScenarioConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A scenario given by path (relative to the config file) or inline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ScenarioRef {
    /// Path to a scenario YAML file.
    Path(PathBuf),
    /// The scenario itself.
    Inline(Box<ScenarioConfig>),
}

/// A string is a path, a mapping an inline scenario whose own errors (an unknown field, a
/// wrong type) come through with the field's name, which an untagged enum would replace by
/// "did not match any variant".
impl<'de> Deserialize<'de> for ScenarioRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RefVisitor;
        impl<'de> serde::de::Visitor<'de> for RefVisitor {
            type Value = ScenarioRef;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a scenario file path or an inline scenario mapping")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ScenarioRef, E> {
                Ok(ScenarioRef::Path(PathBuf::from(v)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ScenarioRef, A::Error> {
                let inline =
                    ScenarioConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(ScenarioRef::Inline(Box::new(inline)))
            }
        }
        d.deserialize_any(RefVisitor)
    }
}
