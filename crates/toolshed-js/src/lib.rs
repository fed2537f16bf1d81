//! Sandboxed JavaScript plugins, run in QuickJS through `rquickjs` — or, for a plugin that
//! needs Node's built-in modules or npm packages, in a `node` process of its own inside the
//! command sandbox (the `node` module; the choice is `toolshed_core::runtime`'s). Both
//! runtimes serve the same plugin interface; what follows describes QuickJS. Code mode
//! (`system.code`, its `run_code` tool) is the public module [`code`].
//!
//! [`JsLoader`] builds a [`Plugin`](toolshed_core::Plugin) from a plugin directory whose
//! manifest says `kind = "js"`. `load` only checks the entry file; the plugin's `init`
//! starts a dedicated OS thread that owns one QuickJS runtime and context (a runtime is not
//! `Send`), evaluates the entry as an ES module, calls its `activate(context)` and turns
//! every registered action into a tool. Tool calls travel to that thread over a bounded
//! channel and run **one at a time**, in order; while a call awaits a host operation the
//! next call waits too. `stop` ends the thread and frees the runtime.
//!
//! ```no_run
//! # async fn demo(manifest: toolshed_core::PluginManifest) -> anyhow::Result<()> {
//! use std::path::PathBuf;
//! use std::time::Duration;
//! use toolshed_core::{CallContext, Grants, LoadRequest, PluginLoader};
//! use toolshed_js::JsLoader;
//! use toolshed_ops::{Ops, Services};
//!
//! let services = Services::new(Ops::local(std::path::Path::new("."))?);
//! let plugin = JsLoader::new(&services).load(LoadRequest {
//!     manifest,
//!     dir: PathBuf::from("plugins/acme.hello-world"),
//!     config: Default::default(),
//!     grants: Grants::default(),
//! })?;
//! plugin.init().await?;
//! let tool = plugin.tools().into_iter().next().expect("one action");
//! let out = tool
//!     .call(CallContext::for_test(Duration::from_secs(10)), serde_json::json!({"name": "Ada"}))
//!     .await?;
//! println!("{}", out.text_joined());
//! plugin.stop().await?;
//! # Ok(()) }
//! ```
//!
//! # The plugin contract
//!
//! ## Files
//!
//! - `plugin.toml` with `kind = "js"`; `entry` names the script (default `main.js`): a
//!   regular file inside the plugin directory, at most 1 MiB, no `..`, not absolute, no
//!   symbolic link leading out. The entry is a single ES module; `import` of other files is
//!   not supported (there is no module loader: bundle your code).
//! - `lang.json` (optional): `{"en": {"key": "Hello {name}"}, "zh": {...}}`.
//!
//! ## `main.js`
//!
//! ```js
//! export async function activate(context) {
//!   context.registerActions((t) => [
//!     {
//!       name: "greet",                       // [a-z0-9_], 1..=40 characters
//!       label: t("greet.label"),             // optional title
//!       description: "Greet someone.",       // required, non-empty
//!       properties: {                        // the inputs; optional
//!         name: { type: "string", description: "Who", default: "world" },
//!         tone: { type: "string", enum: ["warm", "dry"], required: true },
//!       },
//!       outputs: { text: { type: "string", required: true } },   // optional
//!       annotations: { readOnly: true, openWorld: false },       // optional
//!       async run(inputs, ctx) {
//!         ctx.logger.info("greeting", inputs.name);
//!         return { text: t("hello", { name: inputs.name }) };
//!       },
//!     },
//!   ]);
//! }
//! ```
//!
//! - The module must export `activate(context)`, sync or async. It must call
//!   `context.registerActions(list)` at least once with an array of actions, or with a
//!   factory `(t) => [...]` that gets the `t` function. Several calls add up; at most
//!   [`JsLimits::max_actions`] actions in all.
//! - Activation fails (the plugin's `init` returns an error naming the problem) when the
//!   module does not parse, throws while loading, exports no `activate`, `activate` throws
//!   or rejects, never calls `registerActions`, registers no action, registers an invalid
//!   action or two actions with one name, runs past [`JsLimits::activate_timeout`], or
//!   returns a promise nothing can settle (host services do not exist during activation).
//! - An action object takes exactly the keys `name`, `label`, `description`, `properties`,
//!   `outputs`, `annotations` and `run` (a function); any other key is an error, to catch
//!   typos.
//!
//! ## Tools
//!
//! Each action becomes the tool `<prefix>_<name>`, where `<prefix>` is the last
//! dot-separated segment of the plugin id with `-` mapped to `_` (plugin
//! `acme.hello-world`, action `greet` → `hello_world_greet`); the whole name must fit in 64
//! characters. The tool's group is the prefix, its title the label. `annotations` (`readOnly`,
//! `destructive`, `idempotent`, `openWorld`) override the cautious defaults (not read-only,
//! destructive, not idempotent, open world); a read-only action is never destructive.
//!
//! `properties` maps names (`[A-Za-z_][A-Za-z0-9_]*`) to `{ type, description?, default?,
//! enum?, required?, items?, format? }`, where `type` is one of `string`, `number`,
//! `integer`, `boolean`, `array`, `object`; `items` (arrays only) is `{ type }`; `format`
//! may only be `"date-time"` on a string; `enum` values and `default` must have the
//! property's type. Any other key or type is an activation error naming the action and the
//! property. The tool's input schema is a conservative JSON Schema: `{"type": "object",
//! "properties": {...}, "required": [...], "additionalProperties": false}` (`required`
//! left out when empty), with no `$ref`, no type unions, no exclusive bounds. Defaults are
//! filled into missing inputs before `run` is called.
//!
//! ## What `run(inputs, ctx)` returns
//!
//! | `run` returns (or resolves to)       | the tool's output |
//! | ------------------------------------ | ----------------- |
//! | `undefined` or `null`                | no content blocks |
//! | a string                             | one text block    |
//! | a plain object                       | a text block with its pretty JSON, and the object as `structured` |
//! | an array, number or boolean          | a text block with its pretty JSON, no `structured` |
//! | a function or symbol                 | error             |
//!
//! Values are converted with `JSON.stringify` semantics (`toJSON` honoured, `undefined`
//! fields dropped; a cycle or a `BigInt` is an error). A result larger than
//! [`JsLimits::max_output_bytes`] (string bytes, or compact JSON bytes) is an error saying
//! so. When the action declares `outputs`, the tool gets an output schema (`{"type":
//! "object", "properties", "required"}`, extra fields allowed) and every result must be an
//! object with the required fields, of the declared types; anything else fails the call, so
//! `structured` always matches the schema.
//!
//! ## Errors
//!
//! - A thrown value or rejected promise → `ToolError::Failed` with the error's message
//!   (prefixed by its name unless plain `Error`), e.g. `TypeError: x is not a function`.
//!   The first stack line (`at run (main.js:12:9)`, the entry named by its path inside the
//!   plugin, never a host path) is logged at `info`, not shown to the caller: a model can
//!   do nothing with the plugin's source positions. Load errors keep it in the message.
//! - JavaScript running longer than [`JsLimits::cpu_per_call`] without awaiting →
//!   `Failed`: "the plugin's code ran past its 5 s CPU limit ...". The budget starts again
//!   each time the script resumes after a host promise settles.
//! - Allocating past [`JsLimits::memory_bytes`] → `Failed`: "... ran out of its 64 MiB memory
//!   limit ..." (unless the script catches the out-of-memory error itself).
//! - Recursing past [`JsLimits::stack_bytes`] → `Failed`: "... ran past its 1 MiB stack
//!   limit (recursion too deep) ...".
//! - The call's deadline passing → `ToolError::Timeout`; the caller cancelling →
//!   `ToolError::Cancelled`. Both also apply while the script awaits a host operation: the
//!   pending promise is abandoned (never settled) and the host operation cancelled.
//! - `run` returning a promise that nothing can settle (pending, with no host operation in
//!   flight) → `Failed` at once rather than waiting for the deadline.
//! - More than [`JsLimits::max_queued_calls`] calls waiting → `Failed`: "plugin ... is
//!   busy".
//!
//! After any of these the plugin stays usable. After a stopped or failed call the host runs
//! the garbage collector. Promise jobs a call left behind get 200 ms to finish; if they do
//! not, or if after running out of memory the heap is still above three quarters of the
//! limit once garbage is collected, the runtime is thrown away and rebuilt by evaluating the
//! entry and running `activate` again (module state is lost) before the next call. If that
//! fails, or registers different actions, the plugin reports itself failed.
//!
//! ## `context` (given to `activate`)
//!
//! - `context.id`: the plugin id.
//! - `context.config`: the plugin's configuration at load time (defaults merged with stored
//!   values; may include its secrets — never log them).
//! - `context.t(key, vars?)`: the text for `key` from `lang.json` in the language picked at
//!   load (`TOOLSHED_LANG`, else `LANG`, primary subtag: `zh_CN.UTF-8` → `zh`), falling
//!   back to `en`, then to the key itself. `{name}` placeholders are replaced from `vars`.
//!   Dotted keys also reach nested tables.
//! - `context.logger.{debug,info,warn,error}(...args)`: a `tracing` event with the field
//!   `plugin = <id>`; arguments are joined with spaces (non-strings as JSON). A line is cut
//!   at 4 KiB; at most 200 lines per call (and per activation) are kept, the rest dropped
//!   with one warning.
//! - `context.registerActions(list | (t) => list)`.
//!
//! ## `ctx` (given to `run`)
//!
//! - `ctx.id`, `ctx.t`, `ctx.logger` as above; `ctx.config` is the call's current
//!   configuration (`CallContext::config`).
//! - `ctx.progress(message)`: a progress report (cut at 4 KiB, at most 1000 per call).
//! - `ctx.cancelled()`: whether the call was cancelled or its deadline passed.
//! - The capabilities that are both declared in the manifest (`capabilities.network`,
//!   `fs_read`/`fs_write`, `tools`) and granted ([`Grants`](toolshed_core::Grants)
//!   `http`, `fs_read`/`fs_write`, `tools`). A manifest entry `"*"` means "whatever the user
//!   grants". When nothing of a kind is effective, its object is absent
//!   (`ctx.http === undefined`). Reaching something not granted through a present object
//!   rejects with an `Error` naming it and the command that grants it:
//!   `toolshed plugins grant <id> http:<host>` / `fs-read:<path>` / `fs-write:<path>` /
//!   `tool:<name>`.
//!   - `ctx.http.request({ method, url, headers, body, timeoutMs })` → `{ status, ok,
//!     headers, body, truncated, json() }`; `ctx.http.get(url, opts)`,
//!     `ctx.http.post(url, body, opts)`. A body that is not a string is sent as JSON with
//!     `content-type: application/json` (unless set). Only `http`/`https` URLs without
//!     credentials; the host (any port when granted as `host`, that port when granted as
//!     `host:port`) must be effective. Header names come back lowercase, repeated headers
//!     joined by `, `; the body is UTF-8 (lossy), at most 1 MiB (`truncated` tells). The
//!     timeout defaults to 30 s, is at most 60 s and never past the call's deadline.
//!     Requests go through the host's [`HttpClientHandle`](toolshed_core::HttpClientHandle)
//!     with `NetPolicy::PublicWithin(<the effective hosts>)` (a grant narrows the web
//!     rules, never opens a private address `[web] allow` does not); without one the
//!     promise rejects.
//!   - `ctx.fs.readText(path)` → string (UTF-8, lossy; files up to 4 MiB),
//!     `ctx.fs.writeText(path, text)` (creates parent directories; needs an `fs_write`
//!     grant), `ctx.fs.list(dir = ".")` → `[{ name, type: "file"|"dir"|"symlink"|"other",
//!     size }]` (at most 10,000). Paths are workspace-relative; `..` is folded on the words
//!     and may not climb out of the granted root, and symbolic links are resolved so they
//!     cannot lead out of it either. The work goes through the call's
//!     `toolshed_ops::Ops`, which confines everything to the workspace.
//!   - `ctx.tools.call(name, args)` → `{ text, structured, isError }`, through the host's
//!     [`ToolCallerHandle`](toolshed_core::ToolCallerHandle) (the whole pipeline: review,
//!     policy, audit), with this call's deadline and cancellation. A call the pipeline
//!     refuses, or a tool error, rejects with an `Error` whose `kind` names it
//!     (`not_found`, `denied`, `invalid_arguments`, `needs_approval`, `timeout`, ...).
//! - At most 64 host operations in flight per call. A `ctx` kept past its call throws.
//!
//! ## No ambient authority
//!
//! The global scope is plain ECMAScript (`Context::full`): there is no `require`,
//! `process`, `fetch`, `console`, `setTimeout`, `std` or `os`, no file system and no network
//! except through `ctx`. Dynamic `import()` finds nothing.
//!
//! ## Threads and isolation
//!
//! One runtime per plugin, with its own memory and stack limits; plugins never share a heap
//! and a runaway plugin does not slow another's calls (each has its own thread).
//!
//! QuickJS checks for interrupts between bytecode instructions, counted, not timed. A script
//! that spends its time inside long native operations (catching out-of-memory errors in a
//! loop, say) is stopped later than its CPU limit. Its caller still gets an answer at the
//! call's deadline (`Timeout`, with a short grace for the plugin's own answer), but the
//! plugin's next calls wait until its thread is free again.
//!
//! QuickJS is C: an engine bug could still bring down the process; a worker-process mode is
//! future work.

mod action;
mod agent_spaces;
pub mod code;
mod engine;
mod grants;
mod i18n;
mod limits;
mod loader;
mod node;
mod plugin;
mod tool;
mod worker;

pub use code::{code_plugin, code_plugin_with};

/// Agent Spaces' static `workflow.js` and `tools.js` as actions: one function expression,
/// evaluated by both runtimes.
const STATIC_ACTIONS: &str = include_str!("static_actions.js");

/// `ctx.api`, Agent Spaces' helpers: one function expression of a `request` function,
/// evaluated by both runtimes.
const SPACES_API: &str = include_str!("spaces_api.js");
pub use limits::JsLimits;
pub use loader::{DEFAULT_ENTRY, JsLoader};
