#!/usr/bin/python3 -S
"""dotenv-exec.py ENVFILE CMD [ARGS...]: exec CMD with the dotenv file ENVFILE loaded.

Never `source`d by a shell: values are data, not code. Rules (see images/README.md):
  KEY=value / export KEY=value; blank lines and lines starting with # are ignored.
  'single quoted'  literal, may span lines, no escapes.
  "double quoted"  may span lines; \\n \\r \\t \\" \\\\ \\$ are escapes, other \\x kept as is.
  unquoted         to end of line, trimmed; " #..." (a # after whitespace) starts a comment.
  No ${VAR} expansion. Variables already set in the environment win (dotenv semantics),
  so the platform's PORT cannot be overridden by .env. A missing file loads nothing.
"""
import os, re, sys

KEY = re.compile(r'[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*')
ESC = {'n': '\n', 'r': '\r', 't': '\t', '"': '"', '\\': '\\', '$': '$'}

def parse(text):
    out, i, n = {}, 0, len(text)
    while i < n:
        eol = text.find('\n', i)
        eol = n if eol < 0 else eol
        m = KEY.match(text, i, eol)
        if not m:                       # comment, blank or malformed line: skip it
            i = eol + 1
            continue
        key, i = m.group(1), m.end()
        q = text[i] if i < n else ''
        if q in ("'", '"', '`'):
            i += 1
            val = []
            while i < n and text[i] != q:
                c = text[i]
                if q == '"' and c == '\\' and i + 1 < n:
                    i += 1
                    c = ESC.get(text[i], '\\' + text[i])
                val.append(c)
                i += 1
            if i >= n:                  # unterminated quote: take the rest as the value
                out[key] = ''.join(val)
                break
            out[key] = ''.join(val)
            eol = text.find('\n', i)    # ignore anything after the closing quote
            i = n if eol < 0 else eol + 1
        else:
            val = re.split(r'[ \t]#', text[i:eol], 1)[0].strip()
            out[key] = val[:-1] if val.endswith('\r') else val
            i = eol + 1
    return out

def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, cmd = sys.argv[1], sys.argv[2:]
    try:
        with open(path, encoding='utf-8', errors='surrogateescape') as f:
            for k, v in parse(f.read()).items():
                os.environ.setdefault(k, v)
    except FileNotFoundError:
        pass
    except OSError as e:
        print(f'pod-env-exec: {path}: {e}', file=sys.stderr)
    os.execvp(cmd[0], cmd)

if __name__ == '__main__':
    main()
