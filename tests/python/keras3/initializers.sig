# Keras 3 (keras/src/initializers): issue 33's initializers and the ones
# Pasco had, their names, argument names and defaults (Keras's newer
# input_axes and output_axes are not taken: pasco.initializers says so).
initializers.Zeros()
initializers.Ones()
initializers.Constant(value=0.0)
initializers.RandomUniform(minval=-0.05, maxval=0.05, seed=None)
initializers.RandomNormal(mean=0.0, stddev=0.05, seed=None)
initializers.TruncatedNormal(mean=0.0, stddev=0.05, seed=None)
initializers.VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None)
initializers.GlorotUniform(seed=None)
initializers.GlorotNormal(seed=None)
initializers.HeNormal(seed=None)
initializers.HeUniform(seed=None)
initializers.LecunNormal(seed=None)
initializers.LecunUniform(seed=None)
initializers.Orthogonal(gain=1.0, seed=None)
initializers.get(identifier)
