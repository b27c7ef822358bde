build-index-asan/engine/cpu/index.o: engine/cpu/index.c engine/cpu/cpu.h \
 engine/cpu/../internal.h engine/cpu/../ember.h engine/cpu/../backend.h
engine/cpu/cpu.h:
engine/cpu/../internal.h:
engine/cpu/../ember.h:
engine/cpu/../backend.h:
