# Rewrites a .cu file of cuda/kernels/ for the CPU emulation (emu.h): kernel launches
# `kernel<<<grid, block, smem, stream>>>(args)` (the launch may start on the next line, as
# clang-format breaks it) become `emu::launch(kernel, emu::Config{...})(args)`.
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
launch = re.compile(r'([\w:]+(?:<[^;<>]*(?:<[^;<>]*>[^;<>]*)*>)?)\s*<<<(.*?)>>>\(', flags=re.S)
text = launch.sub(lambda m: 'emu::launch(%s, emu::Config{%s})(' % (m.group(1), m.group(2)), text)
open(dst, 'w').write('#include "emu.h"\n' + text)
