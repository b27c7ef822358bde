build-linalg/engine/index.o: engine/index.c engine/internal.h \
 engine/ember.h engine/backend.h
engine/internal.h:
engine/ember.h:
engine/backend.h:
