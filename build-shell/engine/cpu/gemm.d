build-shell/engine/cpu/gemm.o: engine/cpu/gemm.c engine/cpu/cpu.h \
 engine/cpu/../internal.h engine/cpu/../ember.h engine/cpu/../backend.h \
 /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-pthread/openblas_config.h
engine/cpu/cpu.h:
engine/cpu/../internal.h:
engine/cpu/../ember.h:
engine/cpu/../backend.h:
/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-pthread/openblas_config.h:
