build-index/engine/cpu/copy.o: engine/cpu/copy.c engine/cpu/cpu.h \
 engine/cpu/../internal.h engine/cpu/../ember.h engine/cpu/../backend.h
engine/cpu/cpu.h:
engine/cpu/../internal.h:
engine/cpu/../ember.h:
engine/cpu/../backend.h:
