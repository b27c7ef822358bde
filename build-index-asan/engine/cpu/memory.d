build-index-asan/engine/cpu/memory.o: engine/cpu/memory.c \
 engine/cpu/cpu.h engine/cpu/../internal.h engine/cpu/../ember.h \
 engine/cpu/../backend.h
engine/cpu/cpu.h:
engine/cpu/../internal.h:
engine/cpu/../ember.h:
engine/cpu/../backend.h:
