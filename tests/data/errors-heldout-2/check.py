import tomllib,glob,re,sys
def norm(t): return re.sub(r'\d+','0',re.sub(r'\s+',' ',t)).strip().lower()
old={}
for f in glob.glob('tests/data/errors/*.toml')+glob.glob('tests/data/errors-heldout/*.toml'):
    for c in tomllib.load(open(f,'rb'))['case']: old[norm(c['text'])]=f
seen={}
tot={}
for f in sorted(glob.glob('tests/data/errors-heldout-2/*.toml')):
    d=tomllib.load(open(f,'rb'))
    cnt={'transient':0,'permanent':0,'ambiguous':0}
    for i,c in enumerate(d['case']):
        assert c['label'] in cnt,(f,i); cnt[c['label']]+=1
        assert c['text'] and c['source'].startswith('https://') and '\n' not in c['why'] and isinstance(c['verified'],bool),(f,i)
        n=norm(c['text'])
        if n in old: print('DUP-OLD',f,i,c['text'][:80],old[n])
        if n in seen: print('DUP-NEW',f,i,c['text'][:80],seen[n])
        seen[n]=f
        # substring-ish check
        for o in old:
            if len(n)>30 and (n in o or o in n) and len(o)>30: print('NEAR',f,i,c['text'][:70],'|',o[:70])
    print(f.split('/')[-1],len(d['case']),cnt)
