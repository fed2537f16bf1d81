//! Modules: a plugin's files import one another — ES `import './actions.js'` and CommonJS
//! `require('./actions')` — and JSON files, never anything outside the plugin directory.
//!
//! Names are resolved lexically against the importing file (`./`, `../`) and may not climb
//! out of the plugin directory; each file is then read like the entry (a regular file, no
//! symbolic link leading out, at most [`MAX_ENTRY_BYTES`]). Packages (`import 'lodash'`)
//! and URLs are refused with the reason. A name without an extension finds `name.js`,
//! `name.json`, then `name/index.js`, as CommonJS authors expect.
//!
//! A CommonJS file runs inside `function (exports, require, module, __filename, __dirname)`,
//! once; `require` returns its `module.exports` from then on (cycles see the exports as far
//! as they got, as in Node). An entry is CommonJS when it ends in `.cjs`, or when it has no
//! top-level `import`/`export` and uses `exports`, `module.exports` or `require(`.

use std::cell::Cell;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{Ctx, Error, Function, Module, Object, Value};

use crate::worker::{MAX_ENTRY_BYTES, open_entry, read_opened};

/// The most files one plugin may load (its entry excluded).
const MAX_MODULES: usize = 512;
/// The most bytes of source one plugin may load, all files together.
const MAX_TOTAL_BYTES: u64 = 16 * MAX_ENTRY_BYTES;

/// What a plugin has loaded so far, shared by the ES loader and `require`.
#[derive(Debug)]
pub(super) struct Files {
    dir: PathBuf,
    count: Cell<usize>,
    bytes: Cell<u64>,
}

impl Files {
    pub(super) fn new(dir: PathBuf) -> Rc<Self> {
        Rc::new(Self {
            dir,
            count: Cell::new(0),
            bytes: Cell::new(0),
        })
    }

    /// The plugin-relative path `name` names from the file `base`, checked to exist.
    fn resolve(&self, base: &str, name: &str) -> Result<String, String> {
        if !(name.starts_with("./") || name.starts_with("../")) {
            return Err(format!(
                "only the plugin's own files can be imported (`./file.js`); `{name}` names a package or a URL"
            ));
        }
        let mut parts: Vec<String> = Vec::new();
        let from = Path::new(base).parent().unwrap_or(Path::new(""));
        for component in from.join(name).components() {
            match component {
                Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(format!("`{name}` leads outside the plugin directory"));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!(
                        "`{name}` is absolute; import files of the plugin with ./"
                    ));
                }
            }
        }
        let path = parts.join("/");
        let candidates = [
            path.clone(),
            format!("{path}.js"),
            format!("{path}.json"),
            format!("{path}/index.js"),
        ];
        candidates
            .into_iter()
            .find(|c| self.dir.join(c).is_file())
            .ok_or_else(|| format!("`{name}` (from {base}) is not a file of the plugin"))
    }

    /// The source of the plugin file `path`, within the plugin's limits.
    fn read(&self, path: &str) -> Result<String, String> {
        let (file, size) = open_entry(&self.dir, path)?;
        if self.count.get() >= MAX_MODULES {
            return Err(format!("the plugin loads more than {MAX_MODULES} files"));
        }
        if self.bytes.get() + size > MAX_TOTAL_BYTES {
            return Err(format!(
                "the plugin's files come to more than {MAX_TOTAL_BYTES} bytes of source"
            ));
        }
        let text = read_opened(file, path)?;
        self.count.set(self.count.get() + 1);
        self.bytes.set(self.bytes.get() + text.len() as u64);
        Ok(text)
    }
}

/// Whether an entry's source is CommonJS (see the module docs).
pub(super) fn is_commonjs(name: &str, source: &str) -> bool {
    if name.ends_with(".cjs") {
        return true;
    }
    if name.ends_with(".mjs") {
        return false;
    }
    let module_syntax = source.lines().any(|line| {
        let line = line.trim_start();
        ["import ", "import{", "import\"", "import'", "export "]
            .iter()
            .any(|start| line.starts_with(start))
            || line.starts_with("export{")
    });
    !module_syntax && (source.contains("exports") || source.contains("require("))
}

/// The ES module loader over a plugin's files.
pub(super) struct PluginModules(pub(super) Rc<Files>);

impl Resolver for PluginModules {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        self.0
            .resolve(base, name)
            .map_err(|why| Error::new_resolving_message(base, name, why))
    }
}

impl Loader for PluginModules {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        let source = self
            .0
            .read(name)
            .map_err(|why| Error::new_loading_message(name, why))?;
        let source = if name.ends_with(".json") {
            json_module(name, &source).map_err(|why| Error::new_loading_message(name, why))?
        } else {
            source
        };
        Module::declare(ctx.clone(), name, source)
    }
}

/// An ES module whose default export is the JSON file's value.
fn json_module(name: &str, source: &str) -> Result<String, String> {
    let value: serde_json::Value =
        serde_json::from_str(source).map_err(|e| format!("{name} is not valid JSON: {e}"))?;
    Ok(format!("export default {value};"))
}

/// The host side of `require`: `resolve(from, name)` gives the plugin path `name` names
/// from the file `from`; `load(path)` gives `{json}` for a JSON file, else `{run}`: the
/// file wrapped in its CommonJS function, not yet called.
pub(super) fn cjs_host<'js>(ctx: &Ctx<'js>, files: Rc<Files>) -> rquickjs::Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;
    let resolving = files.clone();
    host.set(
        "resolve",
        Function::new(ctx.clone(), move |from: String, name: String| {
            resolving.resolve(&from, &name).map_err(|why| {
                Error::new_resolving_message(
                    from.clone(),
                    name.clone(),
                    format!("require('{name}') from {from}: {why}"),
                )
            })
        })?,
    )?;
    host.set(
        "load",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, path: String| -> rquickjs::Result<Object<'js>> {
                let source = files
                    .read(&path)
                    .map_err(|why| Error::new_loading_message(path.clone(), why))?;
                let out = Object::new(ctx.clone())?;
                if path.ends_with(".json") {
                    serde_json::from_str::<serde_json::Value>(&source).map_err(|e| {
                        Error::new_loading_message(path.clone(), format!("{path} is not valid JSON: {e}"))
                    })?;
                    let value: Value = ctx.json_parse(source)?;
                    out.set("json", value)?;
                } else {
                    // The wrapper shares the file's first line: its line numbers stay right.
                    let wrapped = format!(
                        "(function (exports, require, module, __filename, __dirname) {{{source}\n}})"
                    );
                    let run: Function = ctx.eval(wrapped)?;
                    out.set("run", run)?;
                }
                Ok(out)
            },
        )?,
    )?;
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_inside_the_plugin_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("lib/util")).unwrap();
        for file in [
            "main.js",
            "lib/actions.js",
            "lib/util/index.js",
            "data.json",
        ] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        let files = Files::new(dir.path().to_path_buf());
        assert_eq!(
            files.resolve("main.js", "./lib/actions.js").unwrap(),
            "lib/actions.js"
        );
        assert_eq!(
            files.resolve("main.js", "./lib/actions").unwrap(),
            "lib/actions.js"
        );
        assert_eq!(
            files.resolve("lib/actions.js", "./util").unwrap(),
            "lib/util/index.js"
        );
        assert_eq!(
            files.resolve("lib/actions.js", "../data").unwrap(),
            "data.json"
        );
        assert_eq!(
            files.resolve("lib/util/index.js", "../../main.js").unwrap(),
            "main.js"
        );
        for (base, bad, why) in [
            ("main.js", "../outside.js", "outside the plugin"),
            (
                "lib/actions.js",
                "../../../etc/passwd",
                "outside the plugin",
            ),
            ("main.js", "lodash", "package or a URL"),
            ("main.js", "https://example.com/x.js", "package or a URL"),
            ("main.js", "/etc/passwd", "package or a URL"),
            ("main.js", "./missing.js", "not a file of the plugin"),
        ] {
            let err = files.resolve(base, bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn commonjs_is_told_from_es_modules() {
        assert!(is_commonjs(
            "main.js",
            "exports.activate = function (context) {};"
        ));
        assert!(is_commonjs(
            "main.js",
            "const a = require('./a');\nmodule.exports = { activate };"
        ));
        assert!(is_commonjs("main.cjs", "function activate() {}"));
        assert!(!is_commonjs(
            "main.js",
            "import { x } from './x.js';\nexport function activate() {}"
        ));
        assert!(!is_commonjs(
            "main.js",
            "export function activate(context) { /* exports */ }"
        ));
        assert!(!is_commonjs("main.mjs", "exports.x = 1"));
        assert!(!is_commonjs("main.js", "function activate() {}"));
    }
}
