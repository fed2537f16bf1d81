#!/usr/bin/env python3
"""Renders one of the manifests of this directory with your values, on standard output:

    python3 deploy/kubernetes/render.py toolshed-replicas.yaml --replicas 3 \\
        --image registry.example/toolshed:1.4 --namespace agents > toolshed.yaml
    kubectl apply -f toolshed.yaml

Values (each optional; what is not given stays as the manifest has it):

  --replicas N         pods (the replicas manifest; the SQLite one runs exactly one)
  --image IMAGE        the container image
  --namespace NS       the namespace of every object, and the Service's names in the
                       accepted Host values (toolshed.NS.svc…)
  --storage SIZE       the data volume's size (the SQLite manifest's PersistentVolumeClaim)
  --cpu LIMIT          the container's CPU limit (e.g. 4)
  --memory LIMIT       the container's memory limit (e.g. 4Gi)
  --host NAME:PORT     another name clients reach the Service by (repeat)
  --command-sandbox    give the pod what the command sandbox needs, so that commands run
                       (sandboxed) instead of being refused: a user namespace
                       (hostUsers: false), procMount: Unmasked, and the seccomp profile
                       seccomp/toolshed.json as a Localhost profile. The pod then meets the
                       `baseline` Pod Security level (Kubernetes 1.35 or later), not
                       `restricted`; docs/deploy.md, "Commands in a pod"
  --seccomp-profile P  where that profile is under the kubelet's seccomp directory
                       (default profiles/toolshed.json)
  --apparmor-profile N a Localhost AppArmor profile for the container (AppArmor nodes: the
                       runtime's default profile refuses mount)

Without --command-sandbox the result keeps what the manifest guarantees (Pod Security
`restricted`, probes, the grace period); tests/rest/test_deploy.py renders several sets of
values, validates each against the Kubernetes API schemas and checks the Pod Security
level each meets. Needs PyYAML (Debian: python3-yaml).
"""

import argparse
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def fail(message):
    sys.exit(f"render.py: {message}")


def render(manifest, replicas=None, image=None, namespace=None, storage=None, cpu=None, memory=None,
           hosts=(), command_sandbox=False, seccomp_profile=None, apparmor_profile=None):
    """The documents of `manifest` (a file of this directory, or a path) with the values set."""
    path = Path(manifest)
    if not path.is_file():
        path = HERE / manifest
    if not path.is_file():
        fail(f"no manifest {manifest}; give toolshed.yaml or toolshed-replicas.yaml")
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    if replicas is not None:
        if replicas < 1:
            fail(f"--replicas {replicas}: give 1 or more")
        if replicas > 1 and deployment["spec"]["strategy"]["type"] == "Recreate":
            fail(f"--replicas {replicas}: {path.name} keeps its state in one SQLite file and runs one pod; "
                 "render toolshed-replicas.yaml (state in Postgres) for more")
        deployment["spec"]["replicas"] = replicas
    if image is not None:
        if not image or any(c.isspace() for c in image):
            fail(f"--image {image!r} is not an image reference")
        container["image"] = image
        # As Kubernetes defaults it: a moving tag is pulled each time.
        tag = image.rsplit("/", 1)[-1]
        container["imagePullPolicy"] = "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"
    for flag, value in (("--cpu", cpu), ("--memory", memory), ("--storage", storage)):
        if value is not None and not QUANTITY.match(value):
            fail(f"{flag} {value!r} is not a Kubernetes quantity (e.g. 2, 500m, 4Gi)")
    if cpu is not None:
        container["resources"]["limits"]["cpu"] = cpu
    if memory is not None:
        container["resources"]["limits"]["memory"] = memory
    if storage is not None:
        claims = [d for d in documents if d["kind"] == "PersistentVolumeClaim"]
        if not claims:
            fail(f"--storage: {path.name} has no volume claim (its data dir is per pod)")
        for claim in claims:
            claim["spec"]["resources"]["requests"]["storage"] = storage
    if (seccomp_profile is not None or apparmor_profile is not None) and not command_sandbox:
        fail("--seccomp-profile and --apparmor-profile go with --command-sandbox")
    if command_sandbox:
        give_the_sandbox(deployment["spec"]["template"]["spec"], container,
                         seccomp_profile or "profiles/toolshed.json", apparmor_profile)
    config = next(d for d in documents if d["kind"] == "ConfigMap")
    text = config["data"]["config.toml"]
    names = []
    if namespace is not None:
        if not NAME.match(namespace):
            fail(f"--namespace {namespace!r} is not a Kubernetes name (lowercase letters, digits, -)")
        for document in documents:
            document["metadata"]["namespace"] = namespace
        names += [f"toolshed.{namespace}.svc:7070", f"toolshed.{namespace}.svc.cluster.local:7070"]
    for host in hosts:
        if not re.match(r"^[A-Za-z0-9.-]+:[0-9]{1,5}$", host):
            fail(f"--host {host!r}: give NAME:PORT")
        names.append(host)
    if names:
        match = re.search(r"^allowed_hosts = \[(.*)\]$", text, re.M)
        if not match:
            fail("the manifest's config has no allowed_hosts line")
        kept = [h.strip().strip('"') for h in match.group(1).split(",") if h.strip()]
        if namespace is not None:
            kept = [h for h in kept if ".svc" not in h]
        every = kept + [n for n in names if n not in kept]
        line = "allowed_hosts = [" + ", ".join(f'"{h}"' for h in every) + "]"
        config["data"]["config.toml"] = text[:match.start()] + line + text[match.end():]
    return documents


def give_the_sandbox(pod, container, seccomp_profile, apparmor_profile):
    """What the command sandbox is built from: its own user namespace inside the pod's, a
    /proc it may mount over (the runtime's masks stop that), and the namespace and mount
    calls RuntimeDefault refuses without CAP_SYS_ADMIN. No capability is added and nothing
    of the host is shared."""
    if not re.match(r"^[A-Za-z0-9._/-]+$", seccomp_profile) or seccomp_profile.startswith("/") \
            or ".." in seccomp_profile.split("/"):
        fail(f"--seccomp-profile {seccomp_profile!r}: give a path under the kubelet's seccomp "
             "directory, such as profiles/toolshed.json")
    pod["hostUsers"] = False
    pod["securityContext"]["seccompProfile"] = {"type": "Localhost", "localhostProfile": seccomp_profile}
    context = container["securityContext"]
    context["procMount"] = "Unmasked"
    if apparmor_profile is not None:
        if not re.match(r"^[A-Za-z0-9._-]+$", apparmor_profile):
            fail(f"--apparmor-profile {apparmor_profile!r} is not an AppArmor profile name")
        context["appArmorProfile"] = {"type": "Localhost", "localhostProfile": apparmor_profile}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest")
    parser.add_argument("--replicas", type=int)
    parser.add_argument("--image")
    parser.add_argument("--namespace")
    parser.add_argument("--storage")
    parser.add_argument("--cpu")
    parser.add_argument("--memory")
    parser.add_argument("--host", action="append", default=[])
    parser.add_argument("--command-sandbox", action="store_true")
    parser.add_argument("--seccomp-profile")
    parser.add_argument("--apparmor-profile")
    args = parser.parse_args()
    documents = render(args.manifest, args.replicas, args.image, args.namespace, args.storage, args.cpu,
                       args.memory, args.host, args.command_sandbox, args.seccomp_profile,
                       args.apparmor_profile)
    sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False))


if __name__ == "__main__":
    main()
