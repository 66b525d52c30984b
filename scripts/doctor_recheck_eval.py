#!/usr/bin/env python3
"""Measure `vramfit doctor LOG [--gpu CARD] -- <command>` on the labelled reports whose excerpt
holds the serving command that crashed (vLLM/SGLang serve lines, llama-server, ollama run).
Prints one line per report (cause without and with the command, fixes re-checked, re-checked
fits, notes) and the totals. Usage: scripts/doctor_recheck_eval.py BINARY"""
import json, re, shlex, subprocess, sys, glob, os

M = {1: 'weights_do_not_fit', 2: 'kv_cache', 3: 'concurrency', 4: 'fragmentation', 5: 'activation_peak',
     6: 'cuda_graphs', 7: 'other_processes', 8: 'host_memory', 0: 'not_oom', -1: 'unknown'}
# the card each report names (its stack description), in `check`'s syntax
GPU = {
    'vllm-188': 'RTX 2080 Ti', 'qwen-12': 'V100-32G', 'vllm-5376': '8x A6000', 'ollama-11202': '2x 32GiB',
    'recipes-551': 'H100', 'vllm-6156': '2x L40', 'vllm-28923': '4x MI300X', 'vllm-53413': '8x H200',
    'Kimi-VL-54': '8x A100-80G', 'vllm-9445': 'A100-80G', 'sglang-2384': '8x MI300X', 'vllm-27508': 'H100',
    'vllm-586': '4x 16GiB', 'sglang-pr-2863': 'H20', 'vllm-omni-276': '2x A100-80G', 'sglang-5634': '8x H200',
    'ollama-6606': 'RTX 3050', 'vllm-2140': '22GiB', 'ollama-14073': 'RTX PRO 6000', 'llamacpp-11405': '12GiB',
}
CMD = re.compile(r'(?:^|\s)((?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:vllm serve|python3? -u -m vllm\.entrypoints|python3? -m vllm\.entrypoints|python3? -m sglang\.launch_server|\S*llama-server|ollama run)\b.*)')


def command(excerpt):
    lines = excerpt.split('\n')
    for i, l in enumerate(lines):
        m = CMD.search(l)
        if not m:
            continue
        c = m.group(1)
        while c.rstrip().endswith('\\') and i + 1 < len(lines):
            i += 1
            c = c.rstrip()[:-1] + ' ' + lines[i].strip()
        c = c.split('`')[0].split(' || ')[0]
        try:
            args = shlex.split(c)
        except ValueError:
            args = c.split()
        # a paste cut with "..." or a shell variable is not a command check can read
        if any(a in ('...', '-') or '$' in a or a.endswith('...') for a in args):
            return None, c
        return args, c
    return None, None


def doctor(binp, excerpt, extra):
    p = subprocess.run([binp, 'doctor', '-', '--json'] + extra, input=excerpt, capture_output=True, text=True)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr.strip()
    except Exception:
        return p.returncode, None, p.stderr.strip()


def main():
    binp = sys.argv[1]
    root = os.path.join(os.path.dirname(__file__), '..', 'crates/vramfit-doctor/tests/fixtures')
    tot = dict(reports=0, runnable=0, exit2=0, cause_changed=0, fixes=0, flag_fixes=0, rechecked=0, fits=0,
               not_fit=0, fits_as_given=0, not_rechecked=0, agrees=0, says_fits=0, not_rechecked_note=0)
    for fn in sorted(glob.glob(os.path.join(root, 'oom_*.jsonl'))):
        for line in open(fn):
            if not line.strip():
                continue
            r = json.loads(line)
            exp = M.get(r.get('root_cause_class')) if 'root_cause_class' in r else r.get('cause')
            args, raw = command(r['error_excerpt'])
            if raw is None or exp in (None, 'unknown'):
                continue
            tot['reports'] += 1
            if args is None:
                print(f"{r['id']}\t{exp}\tcommand cut in the paste: {raw[:80]}")
                continue
            tot['runnable'] += 1
            _, plain, _ = doctor(binp, r['error_excerpt'], [])
            gpu = GPU.get(r['id'])
            extra = (['--gpu', gpu] if gpu else []) + ['--'] + args
            rc, d, err = doctor(binp, r['error_excerpt'], extra)
            if d is None:
                tot['exit2'] += 1
                print(f"{r['id']}\t{exp}\texit {rc}: {err[:160]}")
                continue
            tot['cause_changed'] += plain['cause'] != d['cause']
            notes = d.get('recheck', [])
            for n in notes:
                tot['agrees'] += 'agrees' in n
                tot['says_fits'] += 'as given fits' in n
                tot['not_rechecked_note'] += n.startswith('fixes not re-checked')
            states = []
            for f in d['fixes']:
                tot['fixes'] += 1
                if not f.get('flag'):
                    continue
                tot['flag_fixes'] += 1
                c = f.get('checked') or ''
                if c.startswith('re-checked'):
                    tot['rechecked'] += 1
                    tot['fits'] += c.startswith('re-checked: fits')
                    tot['fits_as_given'] += c.startswith('re-checked: fits, as the command as given')
                    tot['not_fit'] += c.startswith('re-checked: does not')
                else:
                    tot['not_rechecked'] += 1
                states.append(f"{f['flag']} {f.get('value', '')}: {c[:70]}")
            print(f"{r['id']}\t{exp}\t{plain['cause']}->{d['cause']}\tgpu={gpu}\t{' | '.join(notes)[:140]}\t{' ; '.join(states)}")
    print(json.dumps(tot))


main()
