//! The sections of features above the host ([`Section`]): the binary registers each one it
//! was built with ([`ConfigSources::with_section`]), and the loader reads, narrows, merges
//! and reports them as it does its own, knowing only what [`SectionSpec`] holds.

use super::*;
use crate::section::Section;

/// One registered section, as the loader handles it.
#[derive(Clone, Copy)]
pub struct SectionSpec {
    name: &'static str,
    widening: &'static [(&'static str, &'static str)],
    starter: &'static str,
    read_layer: fn(toml::Value) -> Result<Vec<String>, LayerError>,
    resolve: fn(Option<toml::Value>) -> Result<serde_json::Value, ConfigError>,
}

impl std::fmt::Debug for SectionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SectionSpec")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SectionSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl SectionSpec {
    /// The section `T` declares.
    pub fn of<T: Section>() -> Self {
        Self {
            name: T::NAME,
            widening: T::WIDENING,
            starter: T::STARTER,
            read_layer: read_layer::<T>,
            resolve: resolve::<T>,
        }
    }

    /// The table's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its settings that widen access, as (dotted key, why).
    pub fn widening(&self) -> &'static [(&'static str, &'static str)] {
        self.widening
    }

    /// One layer's table of the section, read alone: the keys nothing reads (dotted from
    /// the document's root), or what is wrong (naming the layer and the key).
    pub(super) fn read_layer(
        &self,
        value: toml::Value,
        source: &str,
    ) -> Result<Vec<String>, ConfigError> {
        let section = self.name;
        (self.read_layer)(value)
            .map(|keys| keys.into_iter().map(|k| format!("{section}.{k}")).collect())
            .map_err(|e| {
                let at = match e.path().to_string() {
                    path if path == "." => String::new(),
                    path => format!("{path}: "),
                };
                ConfigError::Invalid {
                    source_name: source.to_string(),
                    message: format!("[{section}] {at}{}", e.inner()),
                }
            })
    }

    /// The merged table (none when no layer has it) with its defaults filled in, checked.
    pub(super) fn resolve(
        &self,
        value: Option<toml::Value>,
    ) -> Result<serde_json::Value, ConfigError> {
        (self.resolve)(value)
    }
}

/// A value of the wrong type in one layer's table, with where it is.
type LayerError = serde_path_to_error::Error<toml::de::Error>;

fn read_layer<T: Section>(value: toml::Value) -> Result<Vec<String>, LayerError> {
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
    let de = serde_ignored::Deserializer::new(value, &mut note);
    serde_path_to_error::deserialize::<_, T>(de)?;
    Ok(unknown)
}

fn resolve<T: Section>(value: Option<toml::Value>) -> Result<serde_json::Value, ConfigError> {
    let section = match value {
        Some(value) => T::deserialize(value).map_err(|e| ConfigError::Invalid {
            source_name: "merged layers".into(),
            message: format!("[{}] {e}", T::NAME),
        })?,
        None => T::default(),
    };
    section.check()?;
    serde_json::to_value(&section).map_err(|e| ConfigError::Invalid {
        source_name: T::NAME.into(),
        message: e.to_string(),
    })
}

impl Config {
    /// The registered section `T` as the layers set it, its defaults filled in. A section
    /// the sources did not register reads as its defaults (and its table in a file was
    /// reported as an unknown key).
    pub fn section<T: Section>(&self) -> T {
        self.sections
            .get(T::NAME)
            .and_then(|value| serde_json::from_value(value.clone()).ok())
            .unwrap_or_default()
    }
}

impl ConfigSources {
    /// These sources with section `T` registered: its table is read into `T`, its unknown
    /// keys reported and its widening settings narrowed like the host's own.
    #[must_use]
    pub fn with_section<T: Section>(mut self) -> Self {
        self.register(SectionSpec::of::<T>());
        self
    }

    /// Registers `spec` (a second one of the same name replaces the first).
    pub fn register(&mut self, spec: SectionSpec) {
        self.sections.retain(|s| s.name != spec.name);
        self.sections.push(spec);
    }

    /// The commented starter config `toolshed config init` writes: the host's sections,
    /// then each registered one's.
    pub fn starter(&self) -> String {
        let mut text = STARTER.to_string();
        for spec in &self.sections {
            if !spec.starter.is_empty() {
                text.push('\n');
                text.push_str(spec.starter);
            }
        }
        text
    }
}
