#!/usr/bin/env python3
"""Validates attain's JSON files against the schema documents in docs/schemas/.

Usage: check-schemas.py FILE...

Each FILE names its schema in its "schema" field ("attain.mla/1" is checked against
docs/schemas/attain.mla-1.schema.json). Exits 1 naming every file that does not match, has no
"schema", or names one without a document. Needs Debian's python3-jsonschema.
"""
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("check-schemas: python3-jsonschema is missing (apt-get install python3-jsonschema)")

SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "schemas"


def load_all():
    """Every schema document, keyed by its $id, checked against the metaschema."""
    docs = {}
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        docs[schema["$id"]] = schema
    return docs


def validator_for(schema, docs):
    """A validator whose cross-document $refs resolve among `docs` (jsonschema 4.10 and 4.18+)."""
    try:
        import referencing

        registry = referencing.Registry().with_resources(
            (uri, referencing.Resource.from_contents(doc)) for uri, doc in docs.items())
        return jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:
        resolver = jsonschema.RefResolver.from_schema(schema, store=docs)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)


def document_for(name, docs):
    path = SCHEMAS / (name.replace("/", "-") + ".schema.json")
    if not path.is_file():
        return None, path
    return validator_for(json.loads(path.read_text()), docs), path


def main(files):
    if not files:
        sys.exit(__doc__)
    docs = load_all()
    bad = 0
    for f in files:
        try:
            doc = json.loads(pathlib.Path(f).read_text())
        except (OSError, ValueError) as e:
            print(f"{f}: cannot read: {e}", file=sys.stderr)
            bad += 1
            continue
        name = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(name, str):
            print(f"{f}: no \"schema\" field", file=sys.stderr)
            bad += 1
            continue
        validator, path = document_for(name, docs)
        if validator is None:
            print(f"{f}: schema {name!r} has no document ({path})", file=sys.stderr)
            bad += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:10]:
            where = "/".join(str(p) for p in e.path) or "(top)"
            print(f"{f}: {where}: {e.message}", file=sys.stderr)
        if errors:
            bad += 1
        else:
            print(f"{f}: {name} ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
