build-index-asan/engine/linalg.o: engine/linalg.c engine/internal.h \
 engine/ember.h engine/backend.h
engine/internal.h:
engine/ember.h:
engine/backend.h:
