# Adapted from tests/data/errors-heldout-2/check.py: checks heldout3's files against all three
# existing corpora. Run from the repository's root:  python3 tests/data/errors-heldout-3/check.py
import tomllib, glob, re, sys
import os
MAIN = 'tests/data/'
HERE = os.path.dirname(os.path.abspath(__file__)) + '/'
NAMES = ['cloud','dotnet','elixir','go','java','jobs','node','php','proxy','python','ruby','rust']
def norm(t): return re.sub(r'\d+', '0', re.sub(r'\s+', ' ', t)).strip().lower()
old = {}
for d in ('errors', 'errors-heldout', 'errors-heldout-2'):
    for f in glob.glob(MAIN + d + '/*.toml'):
        for c in tomllib.load(open(f, 'rb'))['case']:
            old[norm(c['text'])] = f
seen = {}; dups = 0; fmt = 0; near = 0
tot = {'transient': 0, 'permanent': 0, 'ambiguous': 0}; ml = 0; ver = 0; n_all = 0
for name in NAMES:
    f = HERE + name + '.toml'
    try:
        d = tomllib.load(open(f, 'rb'))
    except Exception as e:
        print('FORMAT', f, e); fmt += 1; continue
    cnt = {'transient': 0, 'permanent': 0, 'ambiguous': 0}; fml = 0; fver = 0
    for i, c in enumerate(d.get('case', [])):
        ok = (set(c) <= {'label', 'text', 'source', 'why', 'verified'} and c.get('label') in cnt
              and isinstance(c.get('text'), str) and c['text'].strip()
              and isinstance(c.get('source'), str) and c['source'].startswith('https://')
              and isinstance(c.get('why'), str) and c['why'].strip() and '\n' not in c['why']
              and isinstance(c.get('verified'), bool))
        if not ok:
            print('FORMAT', f, i, c.get('text', '')[:60]); fmt += 1; continue
        cnt[c['label']] += 1
        if '\n' in c['text']: fml += 1
        if c['verified']: fver += 1
        n = norm(c['text'])
        if n in old: print('DUP-OLD', f, i, c['text'][:80], old[n]); dups += 1
        if n in seen: print('DUP-NEW', f, i, c['text'][:80], seen[n]); dups += 1
        seen[n] = f
        for o in list(old) + []:
            if len(n) > 30 and len(o) > 30 and (n in o or o in n):
                print('NEAR', f, i, c['text'][:70], '|', o[:70], old[o]); near += 1
    k = len(d.get('case', []))
    n_all += k; ml += fml; ver += fver
    for l in cnt: tot[l] += cnt[l]
    print(f'{f:12} {k:3} T={cnt["transient"]:2} P={cnt["permanent"]:2} A={cnt["ambiguous"]:2} multi={fml:2} verified={fver:2}')
print(f'total {n_all} {tot} multi-line={ml} verified={ver}')
print(f'duplicates={dups} format_errors={fmt} near={near}')
