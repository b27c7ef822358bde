build-linalg/engine/tensor.o: engine/tensor.c engine/ember.h \
 engine/backend.h
engine/ember.h:
engine/backend.h:
