// kwik (pure-Java QUIC, with agent15 for TLS 1.3) and flupke (its HTTP/3)
// serving ROOT at / with `Cache-Control: no-store`, for
// scripts/peer-server.sh. Neither ships a file server, so this is one.
// Usage: java -cp 'LIB/*:CLASSES' KwikServer IP PORT ROOT CERT KEY
import java.io.InputStream;
import java.io.OutputStream;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import tech.kwik.core.log.SysOutLogger;
import tech.kwik.core.server.ServerConnectionConfig;
import tech.kwik.core.server.ServerConnector;
import tech.kwik.flupke.server.Http3ApplicationProtocolFactory;
import tech.kwik.flupke.server.HttpRequestHandler;

public class KwikServer {
  public static void main(String[] args) throws Exception {
    String ip = args[0];
    int port = Integer.parseInt(args[1]);
    Path root = Paths.get(args[2]).toRealPath();
    char[] password = "h3lab".toCharArray();
    SysOutLogger log = new SysOutLogger();
    log.logWarning(true);
    ServerConnector connector = ServerConnector.builder()
        .withSocket(new DatagramSocket(new InetSocketAddress(ip, port)))
        .withKeyStore(keyStore(Paths.get(args[3]), Paths.get(args[4]), password), "server", password)
        .withConfiguration(ServerConnectionConfig.builder()
            // kwik has no default for these two: 0 would refuse every
            // request stream. 100 is what RFC 9114 §6.1 recommends at least.
            .maxOpenPeerInitiatedBidirectionalStreams(100)
            .maxOpenPeerInitiatedUnidirectionalStreams(3)
            .build())
        .withLogger(log)
        .build();
    connector.registerApplicationProtocol("h3", new Http3ApplicationProtocolFactory(files(root)));
    connector.start();
    System.out.println("kwik 0.10.8 / flupke 0.9.4 serving " + root + " on " + ip + ":" + port + " (h3)");
  }

  static HttpRequestHandler files(Path root) {
    return (request, response) -> {
      String path = request.path().replaceFirst("\\?.*$", "").replaceFirst("^/+", "");
      Path file = root.resolve(path).normalize();
      if (file.startsWith(root) && Files.isDirectory(file)) {
        file = file.resolve("index.html");
      }
      if (!file.startsWith(root) || !Files.isRegularFile(file)) {
        response.setStatus(404);
        response.getOutputStream().close();
        return;
      }
      response.setStatus(200);
      response.addHeader("content-length", Long.toString(Files.size(file)));
      response.addHeader("cache-control", "no-store");
      try (OutputStream out = response.getOutputStream()) {
        Files.copy(file, out);
      }
    };
  }

  // kwik's PEM reader takes RSA keys only; an EC key (what rcgen makes)
  // goes in through a KeyStore, which kwik reads the curve from.
  static KeyStore keyStore(Path certFile, Path keyFile, char[] password) throws Exception {
    Certificate[] chain;
    try (InputStream in = Files.newInputStream(certFile)) {
      chain = CertificateFactory.getInstance("X.509").generateCertificates(in).toArray(new Certificate[0]);
    }
    String pem = Files.readString(keyFile);
    byte[] der = Base64.getDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", ""));
    PrivateKey key;
    try {
      key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (InvalidKeySpecException notEc) {
      key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der));
    }
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setKeyEntry("server", key, password, chain);
    return store;
  }
}
