//! The `diagnostics` operation: the errors and warnings the servers report, of one file
//! or of every file, once the servers have settled.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolshed_core::{CallContext, ToolError, ToolOutput};

use super::{Core, Shown};
use crate::format;
use crate::requests::DiagnosticsArgs;
use crate::server::Server;
use crate::text::Encoding;
use crate::uri::{path_of, uri_of};

/// How long diagnostics must stay unchanged to count as settled.
const QUIET: Duration = Duration::from_millis(400);

impl Core {
    pub(super) async fn diagnostics(
        &self,
        ctx: &CallContext,
        args: DiagnosticsArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let mut notes = Vec::new();
        let mut settled = true;
        let mut reports: Vec<(String, lsp_types::Diagnostic, Encoding)> = Vec::new();
        let servers: Vec<Arc<Server>> = match &args.path {
            Some(path) => {
                let file = self.file(path).await?;
                let Shown {
                    server,
                    note,
                    fresh,
                } = self.show_file(&file).await?;
                notes.extend(note);
                let uri = uri_of(&file.abs);
                // A document shown anew must be reported on again; one the server knows
                // as it is needs only a quiet server.
                let fresh = fresh.map(|before| (uri.as_str(), before));
                settled &= server.settled(deadline, QUIET, fresh).await;
                if let Some(published) = server.diagnostics().get(&uri) {
                    reports.extend(
                        published
                            .diagnostics
                            .iter()
                            .map(|d| (file.rel.clone(), d.clone(), server.encoding)),
                    );
                }
                vec![server]
            }
            None => {
                let servers = self.servers.all().await;
                for server in &servers {
                    self.refresh(server, None).await?;
                }
                for server in &servers {
                    settled &= server.settled(deadline, QUIET, None).await;
                    let mut published: Vec<_> = server.diagnostics().into_iter().collect();
                    published.sort_by(|a, b| a.0.cmp(&b.0));
                    for (uri, p) in published {
                        let Some(rel) = path_of(&uri).and_then(|abs| self.relative(&abs)) else {
                            continue;
                        };
                        reports.extend(
                            p.diagnostics
                                .into_iter()
                                .map(|d| (rel.clone(), d, server.encoding)),
                        );
                    }
                }
                if servers.is_empty() {
                    notes.push(
                        "no language server is running; give `path` to start the one for that file"
                            .to_string(),
                    );
                }
                servers
            }
        };
        if !settled {
            notes.push("(the language server was still working when the call's time ran out: these may change)".into());
        }
        let reader = match servers.first() {
            Some(server) => format::Reader::new(self, server, ctx),
            None => {
                return Ok(ToolOutput::text_and_structured(
                    notes.join("\n"),
                    json!({"diagnostics": [], "total": 0}),
                ));
            }
        };
        let mut out = reader.diagnostics(reports, args.offset, args.limit).await;
        for note in notes.iter().rev() {
            out.prefix(note);
        }
        Ok(out.into_output())
    }
}
