"""Compare two blind labellers' labels of a held-out corpus with the collector's, and (with
--apply, once) change the labels both labellers gave alike and unlike the collector's.

Usage, from the repository's root:
  python3 tests/data/audit_labels.py CORPUS_DIR AUDIT_DIR [--apply]
e.g. tests/data/errors-heldout tests/data/errors-heldout/audit-2026-12-06
AUDIT_DIR holds labels-A.jsonl and labels-B.jsonl (id `ecosystem:index`, label, why).
"""
import json, tomllib, glob, os, sys, collections
base, audit = sys.argv[1], sys.argv[2]
old={}
for f in sorted(glob.glob(base+'/*.toml')):
    eco=os.path.basename(f)[:-5]
    for i,c in enumerate(tomllib.load(open(f,'rb'))['case']):
        old[f'{eco}:{i}']=c
def load(p):
    d={}
    for line in open(p):
        if line.strip():
            o=json.loads(line); d[o['id']]=o
    return d
A=load(f'{audit}/labels-A.jsonl'); B=load(f'{audit}/labels-B.jsonl')
assert set(A)==set(old)==set(B), (len(A),len(B),len(old))
agreeAO=sum(A[k]['label']==old[k]['label'] for k in old)
agreeBO=sum(B[k]['label']==old[k]['label'] for k in old)
agreeAB=sum(A[k]['label']==B[k]['label'] for k in old)
n=len(old)
print(f'A=old {agreeAO}/{n}  B=old {agreeBO}/{n}  A=B {agreeAB}/{n}')
change=[k for k in old if A[k]['label']==B[k]['label']!=old[k]['label']]
print('relabel (A==B!=old):',len(change))
for k in sorted(change):
    print(f"- {k}: {old[k]['label']} -> {A[k]['label']}")
    print(f"    text: {old[k]['text'][:200]!r}")
    print(f"    collector: {old[k]['why']}")
    print(f"    A: {A[k]['why']}")
    print(f"    B: {B[k]['why']}")
if '--apply' in sys.argv:
    # rewrite label lines in the toml files, case by case (label = "x" lines in order)
    by=collections.defaultdict(dict)
    for k in change:
        eco,i=k.split(':'); by[eco][int(i)]=A[k]['label']
    for eco,m in by.items():
        p=f'{base}/{eco}.toml'; lines=open(p).read().split('\n'); n=-1; out=[]; pending=None
        for l in lines:
            if l.startswith('label = '):
                n+=1
                if n in m:
                    pending=f'{eco}:{n}'
                    l=f'label = "{m[n]}"'
            if pending and l.startswith('why = '):
                k=pending; pending=None
                l='why = '+json.dumps(f"{A[k]['why']} (relabelled 2026-12-06: two labellers, each blind to the old label and to the rules, agreed; was {old[k]['label']}: {old[k]['why']})", ensure_ascii=False)
            out.append(l)
        open(p,'w').write('\n'.join(out))
    print('applied')
