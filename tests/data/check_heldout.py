"""Check a held-out error corpus: every case's format, and no text that another corpus (the
public one, tests/data/errors, or another held-out part) or the same part already holds, once
white space and numbers are set aside. Also lists texts that contain another corpus's text or
are contained in one ("NEAR", 30+ characters): a wrapper around a known message, to judge.

Usage, from the repository's root:
  python3 tests/data/check_heldout.py tests/data/errors-heldout-3
Prints per-file counts and a summary line; exits 1 on a format error or a duplicate.
"""
import glob, os, re, sys, tomllib

LABELS = ('transient', 'permanent', 'ambiguous')
FIELDS = {'label', 'text', 'source', 'why', 'verified'}


def norm(t):
    return re.sub(r'\d+', '0', re.sub(r'\s+', ' ', t)).strip().lower()


def cases(path):
    return tomllib.load(open(path, 'rb')).get('case', [])


here = os.path.normpath(sys.argv[1])
others = {}
for d in ['tests/data/errors'] + sorted(glob.glob('tests/data/errors-heldout*')):
    if os.path.normpath(d) == here:
        continue
    for f in glob.glob(d + '/*.toml'):
        for c in cases(f):
            others[norm(c['text'])] = f

seen = {}
dups = fmt = near = 0
tot = dict.fromkeys(LABELS, 0)
multi = verified = n_all = 0
for f in sorted(glob.glob(here + '/*.toml')):
    try:
        file_cases = cases(f)
    except Exception as e:
        print('FORMAT', f, e)
        fmt += 1
        continue
    cnt = dict.fromkeys(LABELS, 0)
    for i, c in enumerate(file_cases):
        ok = (set(c) <= FIELDS and c.get('label') in cnt
              and isinstance(c.get('text'), str) and c['text'].strip()
              and isinstance(c.get('source'), str) and c['source'].startswith('https://')
              and isinstance(c.get('why'), str) and c['why'].strip() and '\n' not in c['why']
              and isinstance(c.get('verified'), bool))
        if not ok:
            print('FORMAT', f, i, c.get('text', '')[:60])
            fmt += 1
            continue
        cnt[c['label']] += 1
        multi += '\n' in c['text']
        verified += c['verified']
        n = norm(c['text'])
        if n in others:
            print('DUP-OTHER', f, i, c['text'][:80], others[n])
            dups += 1
        if n in seen:
            print('DUP-HERE', f, i, c['text'][:80], seen[n])
            dups += 1
        seen[n] = f
        for o, where in others.items():
            if n != o and len(n) > 30 and len(o) > 30 and (n in o or o in n):
                print('NEAR', f, i, c['text'][:70], '|', o[:70], where)
                near += 1
    n_all += len(file_cases)
    for label in LABELS:
        tot[label] += cnt[label]
    print(f'{os.path.basename(f):12} {len(file_cases):3} T={cnt["transient"]:2} '
          f'P={cnt["permanent"]:2} A={cnt["ambiguous"]:2}')
print(f'total {n_all} {tot} multi-line={multi} verified={verified}')
print(f'duplicates={dups} format_errors={fmt} near={near}')
sys.exit(1 if dups or fmt else 0)
