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

The result keeps what the manifest guarantees (PodSecurity `restricted`, probes, the grace
period); tests/rest/test_deploy.py renders several sets of values and validates each
against the Kubernetes API schemas. Needs PyYAML (Debian: python3-yaml).
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
           hosts=()):
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
    args = parser.parse_args()
    documents = render(args.manifest, args.replicas, args.image, args.namespace, args.storage, args.cpu,
                       args.memory, args.host)
    sys.stdout.write(yaml.safe_dump_all(documents, sort_keys=False))


if __name__ == "__main__":
    main()
