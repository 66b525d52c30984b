"""Build crates/vramfit-model/catalog/models.json and cross-check it with the team's facts.

    python3 scripts/catalog/build_models.py [--check-only | --new-only]

--new-only keeps the entries models.json has (some carry evidence added by hand) and appends the
ids it lacks.

Sources of each entry: the team's collected sources (../shared/data/catalog/model_catalog.jsonl)
plus the copies found while verifying (sources_extra.py). The cross-check prints every
memory-relevant value that differs from the team's file, so each difference is a decision.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models_list  # noqa: E402,F401  (registers entries)
import models_list2  # noqa: E402,F401
import models_list3  # noqa: E402,F401
import models_list4  # noqa: E402
import models_list5  # noqa: E402
from models_src import M  # noqa: E402
from sources_extra import EXTRA, RESOLVED, UNVERIFIED  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TEAM = os.path.join(ROOT, "..", "shared", "data", "catalog", "model_catalog.jsonl")
OUT = os.path.join(ROOT, "crates", "vramfit-model", "catalog", "models.json")


def text_cfg(c):
    return c.get("text_config", c)


def team_sources(t):
    out = []
    for s in t.get("sources", []):
        if s.get("repo"):
            ref = f"github:{s['repo']}/{s.get('path', '')}"
            if s.get("commit"):
                ref += f"@{s['commit'][:12]}"
        elif s.get("url"):
            ref = s["url"]
        elif s.get("find_string_id"):
            ref = f"code-index id {s['find_string_id']}"
        elif s.get("kind") == "derived":
            ref = "derived from the base model's entry"
        else:
            continue
        note = s.get("note") or s.get("kind") or ""
        out.append(f"{ref} ({note})" if note else ref)
    return out


def cross_check(team):
    keys = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "vocab_size", "max_position_embeddings", "tie_word_embeddings",
            "rope_theta", "head_dim"]
    diffs = 0
    for e in M:
        t = team.get(e["id"])
        if t is None:
            continue
        c = text_cfg(e["config"])
        for k in keys:
            tv = t.get(k)
            cv = c.get(k)
            if tv is None or cv is None:
                continue
            if isinstance(tv, float) or isinstance(cv, float):
                same = abs(float(tv) - float(cv)) < 1e-6
            else:
                same = tv == cv
            if not same:
                diffs += 1
                print(f"DIFF {e['id']}: {k} team={tv} catalog={cv}")
        sw = (t.get("attention") or {}).get("sliding_window")
        if sw and sw != c.get("sliding_window"):
            print(f"DIFF {e['id']}: sliding_window team={sw} catalog={c.get('sliding_window')}")
    return diffs


def main():
    team = {}
    for line in open(TEAM):
        t = json.loads(line)
        team[t["id"]] = t
    ids = [e["id"] for e in M]
    missing = sorted(set(team) - set(ids))
    if missing:
        print("team models missing from the catalog:", missing)
    if len(set(x.lower() for x in ids)) != len(ids):
        sys.exit("duplicate ids")
    cross_check(team)
    out = []
    for e in M:
        srcs = team_sources(team[e["id"]]) if e["id"] in team else []
        srcs += (EXTRA.get(e["id"], []) + models_list4.SOURCES.get(e["id"], [])
                 + models_list5.SOURCES.get(e["id"], []))
        if not srcs:
            print("no source:", e["id"])
        unverified = []
        if e["id"] in team:
            settled = RESOLVED.get(e["id"], [])
            unverified = [u for u in team[e["id"]].get("unverified_fields", [])
                          if not any(u.startswith(r) for r in settled)]
        unverified += (UNVERIFIED.get(e["id"], []) + models_list4.UNVERIFIED.get(e["id"], [])
                       + models_list5.UNVERIFIED.get(e["id"], []))
        out.append({"id": e["id"], "aliases": e["aliases"], "display_name": e["display_name"],
                    "config": e["config"], "params_official": e["params_official"],
                    "sources": srcs, "unverified": unverified, "notes": e["notes"]})
    if "--check-only" in sys.argv:
        return
    if "--new-only" in sys.argv:
        # models.json carries evidence edited by hand after the last full rebuild: keep every
        # entry it has and append only the ids it lacks
        with open(OUT) as f:
            have = json.load(f)
        known = {o["id"] for o in have}
        out = have + [o for o in out if o["id"] not in known]
    with open(OUT, "w") as f:
        f.write("[\n")
        for i, o in enumerate(out):
            f.write(json.dumps(o, ensure_ascii=False))
            f.write(",\n" if i + 1 < len(out) else "\n")
        f.write("]\n")
    print(f"wrote {len(out)} models to {OUT}")


if __name__ == "__main__":
    main()
