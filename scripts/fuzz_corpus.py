#!/usr/bin/env python3
# Writes the fuzz seed corpus: every shipped deck (inputs/*.yaml) and every bad deck of the
# table in tests/io/test_deck_errors.cpp (kBadDecks; its base decks in tests/io/deck_text.hpp),
# one file each. Re-run after adding table rows:
#   python3 scripts/fuzz_corpus.py tests/fuzz/corpus
import glob, os, re, shutil, sys
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
src = ''.join(open(os.path.join(root, 'tests/io', f)).read()
              for f in ('deck_text.hpp', 'test_deck_errors.cpp'))
tok_re = re.compile(r'"((?:\\.|[^"\\])*)"|([A-Za-z_]\w*)|(-?\d+)|([{},+])|(\s+)|(//[^\n]*)')
def unescape(s):
    return bytes(s, 'utf-8').decode('unicode_escape')
consts = {}
for name in ['kBase', 'kBase2D', 'k2DHead']:
    m = re.search(r'const std::string ' + name + r'\s*=\s*(.*?);', src, re.S)
    consts[name] = ''.join(unescape(x) for x in re.findall(r'"((?:\\.|[^"\\])*)"', m.group(1)))
body = src[src.index('const BadDeck kBadDecks[] = {') + len('const BadDeck kBadDecks[] = {'):]
body = body[:body.index('\n};')]
pos = 0; toks = []
while pos < len(body):
    m = tok_re.match(body, pos); assert m, body[pos:pos+40]; pos = m.end()
    if m.group(1) is not None: toks.append(('s', unescape(m.group(1))))
    elif m.group(2): toks.append(('id', m.group(2)))
    elif m.group(3): toks.append(('n', m.group(3)))
    elif m.group(4): toks.append(('p', m.group(4)))
entries = []; i = 0
while i < len(toks):
    assert toks[i] == ('p', '{'); i += 1
    fields = []; cur = None
    while toks[i] != ('p', '}'):
        t = toks[i]
        if t == ('p', ','): fields.append(cur); cur = None
        elif t[0] == 's': cur = (cur or '') + t[1]
        elif t[0] == 'id': cur = (cur or '') + consts[t[1]]
        elif t[0] == 'n': cur = t[1]
        i += 1
    fields.append(cur); i += 1
    if i < len(toks) and toks[i] == ('p', ','): i += 1
    entries.append(fields)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for f in entries:
    open(os.path.join(out, 'bad_' + f[0] + '.yaml'), 'w').write(f[1])
for p in glob.glob(os.path.join(root, 'inputs/*.yaml')):
    shutil.copy(p, os.path.join(out, 'input_' + os.path.basename(p)))
print(len(entries), 'bad decks')
