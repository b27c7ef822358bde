build-index/engine/access.o: engine/access.c engine/internal.h \
 engine/ember.h engine/backend.h
engine/internal.h:
engine/ember.h:
engine/backend.h:
