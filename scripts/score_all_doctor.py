#!/usr/bin/env python3
"""Diagnose every labelled report in crates/vramfit-doctor/tests/fixtures with a vramfit binary
and print one tab-separated line per report: file, id, established cause, answer, confidence.
Usage: scripts/score_all_doctor.py BINARY > out.tsv  (compare two runs with `diff`)."""
import json, subprocess, sys, glob, os
M = {1: 'weights_do_not_fit', 2: 'kv_cache', 3: 'concurrency', 4: 'fragmentation', 5: 'activation_peak',
     6: 'cuda_graphs', 7: 'other_processes', 8: 'host_memory', 0: 'not_oom', -1: 'unknown'}
FILES = ['oom_dev', 'oom_apart', 'oom_h2', 'oom_gathered'] + ['oom_gathered%d' % k for k in range(2, 9)]
root = os.path.join(os.path.dirname(__file__), '..', 'crates/vramfit-doctor/tests/fixtures')
ok = n = 0
for f in FILES:
    for line in open(os.path.join(root, f + '.jsonl')):
        if not line.strip():
            continue
        r = json.loads(line)
        exp = M.get(r.get('root_cause_class')) if 'root_cause_class' in r else r.get('cause')
        if exp in (None, 'unknown'):
            continue
        out = subprocess.run([sys.argv[1], 'doctor', '-', '--json'], input=r['error_excerpt'],
                             capture_output=True, text=True)
        try:
            d = json.loads(out.stdout); got, conf = d['cause'], d['confidence']
        except Exception:
            got, conf = 'ERR', 0
        n += 1; ok += got == exp
        print(f"{f}\t{r['id']}\t{exp}\t{got}\t{conf}")
print(f"# {ok}/{n}", file=sys.stderr)
