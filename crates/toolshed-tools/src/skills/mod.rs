//! `system.skills`: folders of instructions and scripts (`SKILL.md` with YAML front matter
//! `name` and `description`) that an agent finds cheaply and loads when relevant.
//!
//! Skills are read from the roots given (the workspace's `.toolshed/skills` and
//! `.claude/skills`, the user's skills directory, the `skills/` folder of every running
//! plugin), looked at again at every call, so a
//! skill added or changed is seen at once. `skill_list` gives names and descriptions only;
//! `skill_load` the body and the files of the skill's folder. Every skill is also an MCP
//! prompt (`prompts/list`, `prompts/get`). A skill that breaks a rule (no front matter, a
//! bad name, too large) is listed as a problem with its path, never loaded half.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolshed_core::{
    Library, Plugin, PluginError, PluginKind, PluginManifest, Tool, ToolAnnotations, ToolError,
    ToolOutput, ToolSpec,
};

mod run;
#[cfg(test)]
mod tests;

pub use run::ScriptRunner;

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.skills";

/// The largest `SKILL.md` read.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// The most skills read from one root.
const MAX_SKILLS_PER_ROOT: usize = 200;
/// The most files listed of one skill's folder.
const MAX_FILES: usize = 200;
/// The longest description kept.
const MAX_DESCRIPTION: usize = 1024;

/// Where skills are looked for.
#[derive(Debug, Clone)]
pub struct SkillRoot {
    /// The directory holding one folder per skill.
    pub dir: PathBuf,
    /// What to call it in listings (`workspace`, `claude`, `user`).
    pub source: String,
    /// The workspace-relative path of `dir`, when it is inside the workspace (so the
    /// workspace and exec tools reach the skill's files by it).
    pub in_workspace: Option<String>,
}

/// One skill, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skill {
    name: String,
    description: String,
    source: String,
    dir: PathBuf,
    /// Its folder as a workspace path, when inside the workspace.
    workspace_dir: Option<String>,
    body: String,
    /// The whole front matter as JSON, as the skills extension lists it (a client checks
    /// it against the file's).
    frontmatter: serde_json::Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Every skill under `roots` (a name found twice keeps the first root's), and the
/// problems of those that could not be read, as `path: problem`.
pub(crate) fn discover(roots: &[SkillRoot]) -> (Vec<Skill>, Vec<String>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut problems = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root.dir) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for dir in dirs.into_iter().take(MAX_SKILLS_PER_ROOT) {
            let file = dir.join("SKILL.md");
            if !file.is_file() {
                continue;
            }
            match read_skill(&file, root) {
                Ok(skill) if skills.iter().any(|s| s.name == skill.name) => problems.push(format!(
                    "{}: the name `{}` is taken by a skill found earlier; this one is not used",
                    file.display(),
                    skill.name
                )),
                Ok(skill) => skills.push(skill),
                Err(problem) => problems.push(format!("{}: {problem}", file.display())),
            }
        }
    }
    (skills, problems)
}

fn read_skill(file: &Path, root: &SkillRoot) -> Result<Skill, String> {
    let size = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    if size > MAX_SKILL_BYTES {
        return Err(format!(
            "is {size} bytes; a SKILL.md may have at most {MAX_SKILL_BYTES} (move details into other files of the folder)"
        ));
    }
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("cannot read as UTF-8 text: {e}"))?;
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---")
        .filter(|r| r.starts_with('\n') || r.starts_with("\r\n"))
        .ok_or("does not start with YAML front matter (a `---` line, `name:` and `description:`, then `---`)")?;
    let end = rest
        .find("\n---")
        .ok_or("its front matter is not closed with a `---` line")?;
    let front: FrontMatter = serde_yaml_ng::from_str(&rest[..end])
        .map_err(|e| format!("its front matter is not YAML: {e}"))?;
    let frontmatter = match serde_yaml_ng::from_str::<Value>(&rest[..end]) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let body = rest[end + 4..]
        .trim_start_matches(['-'])
        .trim_start_matches(['\r', '\n'])
        .to_string();
    let folder = file
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = front
        .name
        .map(|n| n.trim().to_string())
        .ok_or("its front matter has no `name`")?;
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(format!(
            "`name: {name}` is not a skill name: use 1 to 64 of a-z, 0-9 and `-` (e.g. pdf-forms)"
        ));
    }
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or(
            "its front matter has no `description`: say what the skill does and when to use it",
        )?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "its description is longer than {MAX_DESCRIPTION} characters; keep it to what an agent needs to choose it"
        ));
    }
    Ok(Skill {
        name,
        description,
        source: root.source.clone(),
        dir: file.parent().map(Path::to_path_buf).unwrap_or_default(),
        workspace_dir: root
            .in_workspace
            .as_ref()
            .map(|base| format!("{}/{folder}", base.trim_end_matches('/'))),
        body,
        frontmatter,
    })
}

/// How the skills extension's URIs begin: `skill://NAME/PATH`.
const SKILL_SCHEME: &str = "skill://";

/// The largest skill file served (and listed) in the skills extension.
const MAX_SKILL_FILE_BYTES: u64 = 1 << 20;

/// Whether `name` is one the skills extension accepts: lowercase letters and digits in
/// parts joined by single hyphens, at most 64 characters.
fn valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// A file path as a URI path: each segment percent-encoded but for unreserved characters.
fn encode_path(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for byte in rel.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// [`encode_path`] undone (an invalid escape is kept as it is).
fn decode_path(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The bytes of `rel` in the skill folder `dir`, when it is a regular file inside that
/// folder — opened beneath it by the kernel (no `..`, no link out, no link as the file), so
/// a link swapped in after the listing leads nowhere — and at most `max` bytes.
fn read_inside(dir: &Path, rel: &str, max: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let file = toolshed_ops::open_beneath(dir, Path::new(rel)).ok()?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= max).then_some(bytes)
}

/// The most bytes one skill listing reads to hash its files, all skills together; past
/// it, a skill is listed with its `SKILL.md` alone.
const MAX_LISTING_BYTES: u64 = 32 << 20;

/// A skill as the skills extension lists it: its `SKILL.md`'s URI, its front matter and
/// every file of its folder with size and SHA-256 (files over the cap left out).
fn manifest_of(skill: &Skill, budget: &mut u64) -> Value {
    use sha2::Digest as _;
    let (files, _) = files_of(&skill.dir);
    let resources: Vec<Value> = files
        .iter()
        .filter_map(|rel| {
            if rel != "SKILL.md" && *budget == 0 {
                return None;
            }
            let bytes = read_inside(&skill.dir, rel, MAX_SKILL_FILE_BYTES)?;
            *budget = budget.saturating_sub(bytes.len() as u64);
            let digest: String = sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            Some(json!({
                "uri": format!("{SKILL_SCHEME}{}/{}", skill.name, encode_path(rel)),
                "digest": format!("sha256:{digest}"),
                "size": bytes.len(),
            }))
        })
        .collect();
    json!({
        "uri": format!("{SKILL_SCHEME}{}/SKILL.md", skill.name),
        "frontmatter": if skill.frontmatter.is_empty() {
            json!({"name": skill.name, "description": skill.description})
        } else {
            Value::Object(skill.frontmatter.clone())
        },
        "resources": resources,
    })
}

/// The files of a skill's folder, relative to it, sorted (at most [`MAX_FILES`]).
fn files_of(dir: &Path) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    let mut cut = false;
    'walk: while let Some(rel) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = rel.join(entry.file_name());
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() {
                if out.len() >= MAX_FILES {
                    cut = true;
                    break 'walk;
                }
                out.push(path.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    (out, cut)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadArgs {
    /// The skill's name, as skill_list gives it
    #[schemars(length(min = 1, max = 64))]
    name: String,
}

struct SkillsPlugin {
    manifest: PluginManifest,
    tools: Vec<Arc<dyn Tool>>,
    library: Arc<SkillLibrary>,
}

struct SkillLibrary {
    roots: Vec<SkillRoot>,
    /// Where `skill_run` starts scripts; `None`: it refuses.
    runner: Option<ScriptRunner>,
    /// Roots that come and go: the `skills/` folders of the plugins running now.
    more: Option<MoreRoots>,
}

/// Skill roots asked for at every call (after the fixed ones): those of running plugins.
pub type MoreRoots = Arc<dyn Fn() -> Vec<SkillRoot> + Send + Sync>;

#[derive(Clone, Copy)]
enum Kind {
    List,
    Load,
    Run,
}

struct SkillTool {
    spec: ToolSpec,
    kind: Kind,
    library: Arc<SkillLibrary>,
}

/// The `system.skills` plugin over `roots`, in the order a name is looked up.
pub fn plugin(roots: Vec<SkillRoot>) -> Arc<dyn Plugin> {
    plugin_with(roots, None, None)
}

/// [`plugin`], with `more` roots asked for at every call (plugins' `skills/` folders), and
/// the `runner` `skill_run` starts scripts with (`None`: it refuses).
pub fn plugin_with(
    roots: Vec<SkillRoot>,
    more: Option<MoreRoots>,
    runner: Option<ScriptRunner>,
) -> Arc<dyn Plugin> {
    let library = Arc::new(SkillLibrary {
        roots,
        runner,
        more,
    });
    let tool = |spec: ToolSpec, kind: Kind| -> Arc<dyn Tool> {
        Arc::new(SkillTool {
            spec: spec.group("skills").annotations(ToolAnnotations::PURE),
            kind,
            library: library.clone(),
        })
    };
    let tools = vec![
        tool(
            ToolSpec::new(
                "skill_list",
                "List the skills available: name and description of each, to choose one to load with skill_load. Cheap; call it when a task might have a skill.",
            )
            .title("List skills")
            .input_schema(crate::args::schema::<ListArgs>()),
            Kind::List,
        ),
        tool(
            ToolSpec::new(
                "skill_load",
                "Load a skill by name: its instructions (SKILL.md without the front matter) and the files of its folder, with the workspace path to reach them (read them with workspace_read, run its scripts with exec_command).",
            )
            .title("Load a skill")
            .input_schema(crate::args::schema::<LoadArgs>()),
            Kind::Load,
        ),
        Arc::new(SkillTool {
            spec: {
                let mut spec = ToolSpec::new(
                    "skill_run",
                    "Run a skill's script confined: it reads its own folder and the workspace folders given in `read`, nothing else; no network.",
                )
                .title("Run a skill's script")
                .group("skills")
                .input_schema(crate::args::schema::<run::RunArgs>())
                // It changes nothing of the workspace (a read-only sandbox), yet runs code.
                .annotations(ToolAnnotations {
                    read_only: true,
                    destructive: false,
                    idempotent: false,
                    open_world: false,
                });
                spec.danger = toolshed_core::Danger::Medium;
                spec
            },
            kind: Kind::Run,
            library: library.clone(),
        }),
    ];
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Skills",
        PluginKind::Builtin,
    );
    manifest.description = "Skills: folders of instructions and scripts (SKILL.md) that an agent lists cheaply and loads when relevant; also offered as MCP prompts.".into();
    manifest.tags = vec!["skills".into()];
    manifest.tools = tools.iter().map(|t| t.spec().clone()).collect();
    Arc::new(SkillsPlugin {
        manifest,
        tools,
        library,
    })
}

impl SkillLibrary {
    async fn read(&self) -> (Vec<Skill>, Vec<String>) {
        let mut roots = self.roots.clone();
        let more = self.more.clone();
        tokio::task::spawn_blocking(move || {
            if let Some(more) = more {
                roots.extend(more());
            }
            discover(&roots)
        })
        .await
        .unwrap_or_default()
    }

    async fn find(&self, name: &str) -> Result<Skill, ToolError> {
        let (skills, _) = self.read().await;
        skills
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
                let close = toolshed_core::suggest::closest(name, names.iter().copied(), 3);
                ToolError::NotFound(format!(
                    "no skill named `{name}`{}; skill_list shows the skills there are",
                    if close.is_empty() {
                        String::new()
                    } else {
                        format!(" (did you mean {}?)", close.join(", "))
                    }
                ))
            })
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: toolshed_core::CallContext,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Kind::Run => {
                let args: run::RunArgs = crate::args::parse(args)?;
                let Some(runner) = &self.library.runner else {
                    return Err(ToolError::Unconfigured {
                        message: "this host runs no commands, so skills' scripts cannot run".into(),
                        variables: Vec::new(),
                    });
                };
                let skill = self.library.find(args.name.trim()).await?;
                run::run(runner, &skill, args, &ctx).await
            }
            Kind::List => {
                let _: ListArgs = crate::args::parse(args)?;
                let (skills, problems) = self.library.read().await;
                let listed: Vec<Value> = skills
                    .iter()
                    .map(|s| json!({"name": s.name, "description": s.description, "source": s.source}))
                    .collect();
                let mut text = if skills.is_empty() {
                    "No skills. Add one as <workspace>/.toolshed/skills/<name>/SKILL.md (front matter: name, description).".to_string()
                } else {
                    skills
                        .iter()
                        .map(|s| format!("{}: {}", s.name, s.description))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                for p in &problems {
                    text.push_str(&format!("\nnot usable: {p}"));
                }
                Ok(ToolOutput::text_and_structured(
                    text,
                    json!({"skills": listed, "problems": problems}),
                ))
            }
            Kind::Load => {
                let args: LoadArgs = crate::args::parse(args)?;
                let skill = self.library.find(args.name.trim()).await?;
                let dir = skill.dir.clone();
                let (files, cut) = tokio::task::spawn_blocking(move || files_of(&dir))
                    .await
                    .unwrap_or_default();
                let place = skill
                    .workspace_dir
                    .clone()
                    .unwrap_or_else(|| skill.dir.display().to_string());
                // `.toolshed/` is toolshed's own: the workspace and exec tools cannot reach it.
                let reachable = skill
                    .workspace_dir
                    .as_deref()
                    .is_some_and(|d| !d.starts_with(".toolshed/"));
                let mut text = format!(
                    "# Skill {}\n\n{}\n\nFiles (in {place}):\n",
                    skill.name,
                    skill.body.trim_end()
                );
                if !reachable && !files.iter().all(|f| f == "SKILL.md") {
                    text.insert_str(
                        0,
                        "(This skill's files are where the workspace and exec tools cannot reach them; keep skills with scripts in <workspace>/.claude/skills.)\n\n",
                    );
                }
                for f in &files {
                    text.push_str(&format!("- {f}\n"));
                }
                if cut {
                    text.push_str(&format!("(only the first {MAX_FILES} files are listed)\n"));
                }
                Ok(ToolOutput::text_and_structured(
                    text,
                    json!({
                        "name": skill.name, "description": skill.description, "source": skill.source,
                        "body": skill.body, "files": files, "workspace_dir": skill.workspace_dir,
                        "reachable": reachable,
                    }),
                ))
            }
        }
    }
}

#[async_trait]
impl Plugin for SkillsPlugin {
    fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn library(&self) -> Option<Arc<dyn Library>> {
        Some(self.library.clone())
    }
}

#[async_trait]
impl Library for SkillLibrary {
    async fn resources(&self) -> Result<Vec<Value>, PluginError> {
        Ok(Vec::new())
    }

    async fn resource_templates(&self) -> Result<Vec<Value>, PluginError> {
        Ok(Vec::new())
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, PluginError> {
        let Some((name, rel)) = uri
            .strip_prefix(SKILL_SCHEME)
            .and_then(|rest| rest.split_once('/'))
        else {
            return Err(PluginError(format!("skills offer no resource {uri:?}")));
        };
        let rel = decode_path(rel);
        let skill = self
            .find(name)
            .await
            .map_err(|e| PluginError(e.to_string()))?;
        let uri = uri.to_string();
        tokio::task::spawn_blocking(move || {
            // Only a file the skill's listing holds: no `..`, no link out of its folder.
            let (files, _) = files_of(&skill.dir);
            if !files.contains(&rel) {
                return Err(PluginError(format!(
                    "the skill `{}` has no file {rel:?}; skills/get lists its files",
                    skill.name
                )));
            }
            let bytes = read_inside(&skill.dir, &rel, MAX_SKILL_FILE_BYTES)
                .ok_or_else(|| PluginError(format!("{rel:?} of the skill `{}` cannot be read, or is over {MAX_SKILL_FILE_BYTES} bytes", skill.name)))?;
            let mime = if rel.ends_with(".md") { "text/markdown" } else { "text/plain" };
            Ok(match String::from_utf8(bytes) {
                Ok(text) => json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}),
                Err(e) => {
                    use base64::Engine as _;
                    let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                    json!({"contents": [{"uri": uri, "mimeType": "application/octet-stream", "blob": blob}]})
                }
            })
        })
        .await
        .map_err(|e| PluginError(e.to_string()))?
    }

    async fn complete(&self, _params: Value) -> Result<Value, PluginError> {
        // Skill prompts take no arguments.
        Ok(json!({"values": []}))
    }

    async fn skills(&self) -> Result<Vec<Value>, PluginError> {
        let (skills, _) = self.read().await;
        tokio::task::spawn_blocking(move || {
            let mut budget = MAX_LISTING_BYTES;
            skills
                .iter()
                .filter(|s| valid_skill_name(&s.name))
                .map(|s| manifest_of(s, &mut budget))
                .collect()
        })
        .await
        .map_err(|e| PluginError(e.to_string()))
    }

    async fn watch(
        &self,
        uri: &str,
        _updated: toolshed_core::ResourceUpdated,
        _stop: toolshed_core::CancellationToken,
    ) -> Result<(), PluginError> {
        Err(PluginError(format!(
            "skills tell of no changes to {uri}: read it again, or follow the list (skills/list)"
        )))
    }

    async fn prompts(&self) -> Result<Vec<Value>, PluginError> {
        let (skills, _) = self.read().await;
        Ok(skills
            .iter()
            .map(|s| json!({"name": s.name, "title": s.name, "description": s.description, "arguments": []}))
            .collect())
    }

    async fn get_prompt(
        &self,
        name: &str,
        _arguments: Map<String, Value>,
    ) -> Result<Value, PluginError> {
        let skill = self
            .find(name)
            .await
            .map_err(|e| PluginError(e.to_string()))?;
        let place = skill
            .workspace_dir
            .clone()
            .unwrap_or_else(|| skill.dir.display().to_string());
        Ok(json!({
            "description": skill.description,
            "messages": [{"role": "user", "content": {"type": "text",
                "text": format!("Use the skill `{}` (its files are in {place}):\n\n{}", skill.name, skill.body.trim_end())}}]
        }))
    }
}
