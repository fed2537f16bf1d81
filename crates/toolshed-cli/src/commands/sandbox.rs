//! `toolshed sandbox check`: what the command sandbox enforces on this machine.

use toolshed_host::Host;

use crate::Failure;
use crate::render::print_json;

/// Prints the machine's layers and the configured sandbox's live check; fails when the
/// configured mode cannot be enforced.
pub(crate) fn check(host: &Host, json: bool) -> Result<(), Failure> {
    let layers = toolshed_ops::sandbox::machine();
    let checked = host.services().ops.process.check_sandbox();
    let (mode, network, enforced, error) = match &checked {
        None => ("full-access", "on", Vec::new(), None),
        Some(Ok(e)) => (
            e.mode.as_str(),
            e.network.as_str(),
            e.enforced.clone(),
            None,
        ),
        Some(Err(e)) => ("", "", Vec::new(), Some(e.to_string())),
    };
    let configured = &host.config().config.sandbox;
    if json {
        print_json(&serde_json::json!({
            "ok": error.is_none(),
            "mode": if error.is_some() { configured.mode.as_str() } else { mode },
            "network": if error.is_some() { configured.network.as_str() } else { network },
            "enforced": enforced,
            "error": error,
            "pod": pod_advice().filter(|_| error.is_some()),
            "machine": layers.iter().map(|l| serde_json::json!({
                "layer": l.name, "available": l.available, "detail": l.detail,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        for layer in &layers {
            let mark = if layer.available { "ok  " } else { "no  " };
            outln!("{mark}  {:<16} {}", layer.name, layer.detail);
        }
        outln!();
        match &error {
            None if checked.is_none() => outln!(
                "mode full-access: commands run without a sandbox (set [sandbox] mode = \
                 \"workspace-write\" to confine them)"
            ),
            None => {
                outln!("mode {mode} · network {network}: a sandboxed `true` ran");
                outln!("enforced: {}", enforced.join(", "));
            }
            Some(e) => {
                outln!("FAIL  {e}");
                if let Some(advice) = pod_advice() {
                    outln!("{advice}");
                }
            }
        }
    }
    match error {
        Some(_) => Err(Failure::Runtime(String::new())),
        None => Ok(()),
    }
}

/// Inside a Kubernetes pod (`KUBERNETES_SERVICE_HOST` is set), what the pod must grant
/// the command sandbox when it cannot be built there; `None` elsewhere.
pub(crate) fn pod_advice() -> Option<&'static str> {
    std::env::var_os("KUBERNETES_SERVICE_HOST").map(|_| POD_ADVICE)
}

const POD_ADVICE: &str = "this is a Kubernetes pod: the command sandbox needs the pod in a \
     user namespace (hostUsers: false) with procMount: Unmasked and the seccomp profile \
     deploy/kubernetes/seccomp/toolshed.json (type Localhost, installed on each node; on \
     AppArmor nodes also a Localhost AppArmor profile that allows mount), which the \
     `baseline` Pod Security level allows (Kubernetes 1.35 or later; `restricted` forbids \
     procMount: Unmasked). Render the manifest with `render.py --command-sandbox` \
     (docs/deploy.md, \"Commands in a pod\"), or make the pod the boundary with [sandbox] \
     mode = \"full-access\"";
